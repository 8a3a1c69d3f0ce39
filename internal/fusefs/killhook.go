package fusefs

import (
	"os"
	"strings"
	"syscall"

	"shoal/internal/vfs"
)

// KillEnv names a test hook: set to STAGE:OP:PATH (OP as OpNames has it:
// mkdir, create, open, write...), a server kills itself with SIGKILL the
// first time an OP request reaches STAGE, and creates PATH to say so (so
// that its successors, which inherit the setting, do not). The stages:
//
//   - intent: its intent is journaled, nothing is committed (vfs.StageIntent);
//   - commit: the engine committed it, and its reply (for a create, its
//     handle) is not journaled yet (vfs.StageCommitted);
//   - reply: it succeeded, and its reply is journaled but not written to
//     the kernel.
//
// Tests use it to crash a server inside an operation. For tests only; not
// a user setting.
const KillEnv = "SHOAL_TEST_KILL"

// killHook is Options.Kill parsed.
type killHook struct{ stage, op, marker string }

func parseKillHook(s string) killHook {
	parts := strings.SplitN(s, ":", 3)
	if len(parts) != 3 || parts[2] == "" {
		return killHook{}
	}
	switch parts[0] {
	case "intent", "commit", "reply":
		return killHook{parts[0], parts[1], parts[2]}
	}
	return killHook{}
}

// fire kills the process if op is the hook's, its stage is the reply's,
// and it has not fired yet.
func (k killHook) fire(op int) {
	if k.stage == "reply" && k.op == opNames[op] {
		k.kill()
	}
}

// stageHook returns the vfs stage callback that kills the process for
// op, if the hook is armed for one of op's vfs stages (nil otherwise).
func (k killHook) stageHook(op int) func(vfs.Stage) {
	var at vfs.Stage
	switch k.stage {
	case "intent":
		at = vfs.StageIntent
	case "commit":
		at = vfs.StageCommitted
	}
	if at == 0 || k.op != opNames[op] {
		return nil
	}
	return func(s vfs.Stage) {
		if s == at {
			k.kill()
		}
	}
}

// kill kills the process unless the hook fired before, in it or in one
// it succeeded.
func (k killHook) kill() {
	f, err := os.OpenFile(k.marker, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	_ = f.Close()
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
}
