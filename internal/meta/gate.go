package meta

import "context"

// Commit gates: a slice commit that overlaps its block's Put.
//
// A slice may be committed only once its blocks are durable (the data
// layer's invariant 1). A writer that knows its last block's Put is short
// (a small block into a name made durable ahead: a write and an
// fdatasync) may start WriteSlices while that Put still runs, carrying
// the Put's outcome in the context as a gate: the engine does the
// transaction's work (its reads, its writes, in SQLite under the
// writer's lock) and awaits the gate just before it commits; a gate that
// fails fails the transaction, which then commits nothing. The commit
// still follows the block's durability, as before, but what the
// transaction does ahead of its COMMIT no longer waits for the Put.
//
// An engine that honours gates says so (CommitGater); a writer must not
// overlap a commit with a Put on an engine that does not.

// CommitGater is implemented by engines whose WriteSlices awaits the
// context's commit gate (AwaitCommitGate) before it commits.
type CommitGater interface {
	AwaitsCommitGate() bool
}

type gateKey struct{}

// WithCommitGate returns ctx carrying gate, which returns once what the
// commit depends on is durable, or the error that makes it impossible.
// It may be called several times (a transaction retried runs again) and
// must return the same outcome each time.
func WithCommitGate(ctx context.Context, gate func() error) context.Context {
	return context.WithValue(ctx, gateKey{}, gate)
}

// AwaitCommitGate waits for ctx's commit gate, if it carries one, and
// returns its error. A transaction calls it last, before it commits.
func AwaitCommitGate(ctx context.Context) error {
	if gate, ok := ctx.Value(gateKey{}).(func() error); ok {
		return gate()
	}
	return nil
}
