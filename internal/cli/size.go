package cli

import (
	"fmt"
	"strconv"
	"strings"
)

// parseSize reads a byte count like "4194304", "4M", "4MiB", "64K", "1G".
// Suffixes are binary (K = 1024).
func parseSize(s string) (int64, error) {
	t := strings.TrimSpace(strings.ToUpper(s))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "B"), "I")
	mult := int64(1)
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 'K':
			mult = 1 << 10
		case 'M':
			mult = 1 << 20
		case 'G':
			mult = 1 << 30
		case 'T':
			mult = 1 << 40
		}
		if mult > 1 {
			t = t[:n-1]
		}
	}
	v, err := strconv.ParseInt(t, 10, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("bad size %q: use a number of bytes with an optional K, M, G or T suffix", s)
	}
	return v * mult, nil
}

// sizeFlag is a pflag.Value holding a byte count.
type sizeFlag struct{ v *int64 }

// String is the value as --help shows its default and parseSize reads it
// back: the largest binary suffix that divides it exactly (256M, not
// 268435456).
func (f sizeFlag) String() string {
	if f.v == nil {
		return "0"
	}
	return shortSize(*f.v)
}

// shortSize writes n with the largest suffix (K, M, G, T) that divides it.
func shortSize(n int64) string {
	for _, u := range []struct {
		suffix string
		size   int64
	}{{"T", 1 << 40}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}} {
		if n != 0 && n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}

func (f sizeFlag) Set(s string) error {
	v, err := parseSize(s)
	if err != nil {
		return err
	}
	*f.v = v
	return nil
}

func (f sizeFlag) Type() string { return "size" }
