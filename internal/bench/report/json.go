package report

import (
	"encoding/json"
	"io"

	"shoal/internal/bench/result"
)

// JSON writes rep as indented JSON (schema result.Schema).
func JSON(w io.Writer, rep *result.Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// ReadJSON decodes a report written by JSON.
func ReadJSON(r io.Reader) (*result.Report, error) {
	var rep result.Report
	if err := json.NewDecoder(r).Decode(&rep); err != nil {
		return nil, err
	}
	return &rep, nil
}
