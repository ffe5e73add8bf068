package loadgen

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// grpcConn is one HTTP/2 connection of a grpc lane: unary calls through grpc-go.
type grpcConn struct {
	cc      *grpc.ClientConn
	calls   *callWriter
	timeout time.Duration
}

// dialGRPC makes the connections of a grpc plan; grpc-go dials lazily, on the first call.
func dialGRPC(calls *callWriter, timeout time.Duration) dialStream {
	return func(arm int, addr string, dial func(context.Context, string) (net.Conn, error)) (streamConn, error) {
		cc, err := grpc.NewClient("passthrough:///"+addr,
			grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithContextDialer(dial),
			grpc.WithDefaultCallOptions(grpc.ForceCodecV2(rawCodec{})),
			grpc.WithUserAgent(userAgent))
		if err != nil {
			return nil, fmt.Errorf("plan: targets.%s: %w", armNames[arm], err)
		}
		return &grpcConn{cc: cc, calls: calls, timeout: timeout}, nil
	}
}

func (c *grpcConn) close() { c.cc.Close() }

// do encodes the message and makes the call; the send time is taken after encoding, just
// before grpc-go writes.
func (c *grpcConn) do(j *job, o *outcome, now func() time.Duration) {
	entry := j.entry(c.calls.plan, c.calls.seed)
	o.entry = entry
	msg, md, err := c.calls.encode(entry, j)
	o.sent = now()
	if err != nil {
		o.done, o.errClass = o.sent, errOther
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	if md != nil {
		ctx = metadata.NewOutgoingContext(ctx, md)
	}
	var reply []byte
	err = c.cc.Invoke(ctx, c.calls.entries[entry].method, &msg, &reply)
	o.done = now()
	o.errClass, o.grpcCode = classifyCall(err, ctx, c.cc)
}

// classifyCall sorts a finished call: OK; past the deadline (timeout_ms), a timeout; a
// connection that could not be made (UNAVAILABLE with the connection not ready), connect;
// any other status by its code.
func classifyCall(err error, ctx context.Context, cc *grpc.ClientConn) (errClass, uint32) {
	if err == nil {
		return errNone, 0
	}
	code := status.Code(err)
	switch {
	case code == codes.DeadlineExceeded && errors.Is(ctx.Err(), context.DeadlineExceeded):
		return errTimeout, 0
	case code == codes.Unavailable && cc.GetState() != connectivity.Ready:
		return errConnect, 0
	}
	return errGRPC, uint32(code)
}

// grpcCodeNames are the gRPC status codes as the result names them.
var grpcCodeNames = [...]string{"ok", "canceled", "unknown", "invalid_argument", "deadline_exceeded", "not_found",
	"already_exists", "permission_denied", "resource_exhausted", "failed_precondition", "aborted", "out_of_range",
	"unimplemented", "internal", "unavailable", "data_loss", "unauthenticated"}

func grpcCodeName(c uint32) string {
	if int(c) < len(grpcCodeNames) {
		return grpcCodeNames[c]
	}
	return "code_" + strconv.FormatUint(uint64(c), 10)
}

// rawCodec hands grpc-go messages already encoded by protobuf (callWriter) and leaves the
// answers undecoded: the call's status is what is measured, and decoding the reply would
// only add the generator's CPU.
type rawCodec struct{}

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(*v.(*[]byte))}, nil
}

func (rawCodec) Unmarshal(mem.BufferSlice, any) error { return nil }

func (rawCodec) Name() string { return "proto" }
