package kvopen

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"shoal/internal/meta/kv"
	"shoal/internal/meta/kv/memkv"
	"shoal/internal/meta/kv/rediskv"
	"shoal/internal/meta/kv/sqlkv"
	"shoal/internal/secret"
)

// Schemes lists the META-URL forms Open accepts, for help texts.
const Schemes = "sqlite:///PATH, postgres://USER:PASS@HOST:PORT/DB, redis://[:PASS@]HOST:PORT/DB (also rediss://, redis+sentinel://, redis+cluster://), mem:// (tests)"

// Open opens the store url names:
//
//	sqlite:///abs/path/meta.db, sqlite://rel/meta.db   → sqlkv (SQLite)
//	postgres://..., postgresql://...                    → sqlkv (PostgreSQL)
//	redis://, rediss://, redis+sentinel://, redis+cluster:// (and rediss+) → rediskv
//	mem://                                              → memkv, a fresh empty
//	                                                      in-memory store (tests)
//
// A postgres or redis URL without a password gets the one of the
// environment variable SHOAL_META_PASSWORD (secret.PasswordEnv), if set.
//
// Errors name the problem: an unknown scheme lists the supported ones.
func Open(ctx context.Context, url string) (kv.Store, error) {
	scheme, _, ok := strings.Cut(url, ":")
	if !ok || scheme == "" {
		return nil, badURL(fmt.Sprintf("META-URL %q has no scheme: use %s", secret.Mask(url), Schemes))
	}
	switch strings.ToLower(scheme) {
	case "sqlite", "sqlite3":
		return sqlkv.Open(ctx, url)
	case "postgres", "postgresql":
		return sqlkv.Open(ctx, secret.WithPassword(url, secret.EnvPassword()))
	case "redis", "rediss", "redis+sentinel", "rediss+sentinel", "redis+cluster", "rediss+cluster":
		return rediskv.Open(ctx, secret.WithPassword(url, secret.EnvPassword()))
	case "mem", "memory":
		return memkv.New(), nil
	}
	return nil, badURL(fmt.Sprintf("unknown META-URL scheme %q: use %s", scheme, Schemes))
}

// ErrBadURL is what Open's errors for a META-URL of no known form are
// (errors.Is): the caller's mistake, a usage error to the command line.
var ErrBadURL = errors.New("bad META-URL")

// badURL is an error that is ErrBadURL with its own message.
type badURL string

func (e badURL) Error() string        { return string(e) }
func (e badURL) Is(target error) bool { return target == ErrBadURL }
