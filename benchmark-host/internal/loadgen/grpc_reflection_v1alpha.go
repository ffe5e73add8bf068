//lint:file-ignore SA1019 v1alpha reflection is deprecated, and the fallback for gRPC servers that predate v1 (reflectionStream asks v1 first)

package loadgen

import (
	"context"
	"errors"
	"fmt"
	"io"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	reflectionv1 "google.golang.org/grpc/reflection/grpc_reflection_v1"
	reflectionv1alpha "google.golang.org/grpc/reflection/grpc_reflection_v1alpha"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// reflectionV1alpha is reflectionStream's ask over v1alpha, which has the same messages under
// another name: each v1 question is sent re-encoded as its v1alpha twin.
func reflectionV1alpha(ctx context.Context, cc *grpc.ClientConn) (func(*reflectionv1.ServerReflectionRequest) ([][]byte, error), error) {
	alpha, err := reflectionv1alpha.NewServerReflectionClient(cc).ServerReflectionInfo(ctx)
	if err != nil {
		return nil, err
	}
	return func(r *reflectionv1.ServerReflectionRequest) ([][]byte, error) {
		b, _ := proto.Marshal(r)
		ar := &reflectionv1alpha.ServerReflectionRequest{}
		if err := proto.Unmarshal(b, ar); err != nil {
			return nil, err
		}
		if err := alpha.Send(ar); err != nil {
			return nil, err
		}
		resp, err := alpha.Recv()
		if errors.Is(err, io.EOF) || status.Code(err) == codes.Unimplemented {
			return nil, errors.New("the server does not serve reflection")
		}
		if err != nil {
			return nil, err
		}
		if e := resp.GetErrorResponse(); e != nil {
			return nil, fmt.Errorf("%s", e.GetErrorMessage())
		}
		return resp.GetFileDescriptorResponse().GetFileDescriptorProto(), nil
	}, nil
}
