package rediskv

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/redis/go-redis/v9"
)

// go-redis logs refused dials and pool trouble through a logger of its
// own, straight to stderr, where they interleave with a command's output.
// They go to the process's slog logger at debug level instead: the errors
// that matter reach the caller as errors (with the address, see Open).
func init() { redis.SetLogger(debugLogger{}) }

type debugLogger struct{}

func (debugLogger) Printf(ctx context.Context, format string, args ...any) {
	slog.DebugContext(ctx, "redis client: "+fmt.Sprintf(format, args...))
}
