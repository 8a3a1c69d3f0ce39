package volume

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	"shoal/internal/meta"
	"shoal/internal/secret"
)

// missingSQLite reports a SQLite META-URL whose database file does not
// exist as a volume that is not there (wrapping meta.ErrNotFormatted),
// before opening the engine would create an empty database in its place:
// only format (and load, and up) create one.
func missingSQLite(metaURL string) error {
	rest, ok := strings.CutPrefix(metaURL, "sqlite://")
	if !ok {
		return nil
	}
	u, err := url.Parse("sqlite://" + rest)
	if err != nil || u.Path == "" {
		return nil // the engine explains a malformed URL
	}
	if _, err := os.Stat(u.Path); !errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return fmt.Errorf("no volume at %s: %w: %s does not exist (create one with 'shoal format %s')",
		secret.Mask(metaURL), meta.ErrNotFormatted, u.Path, secret.Mask(metaURL))
}
