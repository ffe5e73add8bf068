package contract

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Decode reads one JSON document into a message strictly: an unknown field, a value of the
// wrong type or trailing data is an error that names the field, so a typo never falls back
// to a default.
func Decode(r io.Reader, v any) error {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			return fmt.Errorf("%s: expected %s, got a JSON %s", typeErr.Field, typeErr.Type, typeErr.Value)
		}
		if rest, ok := strings.CutPrefix(err.Error(), "json: "); ok && strings.HasPrefix(rest, "unknown field ") {
			return errors.New(rest) // unknown field "name"
		}
		return fmt.Errorf("not valid JSON: %w", err)
	}
	if dec.More() {
		return errors.New("trailing data after the JSON document")
	}
	return nil
}
