package cli

import (
	"encoding/json"
	"io"
)

// printJSON writes v as indented JSON, the form of every --json output.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// jsonList is list, or an empty list for nil, so that no --json output
// prints null for "none".
func jsonList[T any](list []T) []T {
	if list == nil {
		return []T{}
	}
	return list
}
