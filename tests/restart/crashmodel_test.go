package restart

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"shoal/internal/testutil"
)

// Random operations against a model, across a crash. TestResentRequestRunsOnce
// crashes hand-picked operations on a file system that holds nothing else;
// here the caught request is one of a random sequence on a small name space
// (six names in two directories), where collisions are common: a create of
// a name that exists, an rmdir of a directory that does not empty, an
// exclusive setxattr of a key that is set, an exchange, a rename over a
// hard link of the same file. A model predicts every operation's outcome,
// success or the exact errno Linux gives; the request the server died in
// must have the outcome it would have had without the crash, once, like
// every other. At the end the whole tree, read through a second mount, must
// be the model's.
//
// Each case's seed picks where the server dies (crashPoints: every op
// kind at every stage, over the cases) and the sequence. SHOAL_SEED runs
// one case, SHOAL_SEEDS=FROM-TO a range of them.

// crashPoint is where a case's server dies: the first request of op to
// reach stage; with fails, a request the file system refuses (an rmdir or
// a rename onto a directory that is not empty), which reaches the intent
// stage and must fail after the crash as it would have without. (An
// XATTR_CREATE setxattr of a set xattr and a removexattr of an unset one
// are refused before their intent, so no crash can catch them past it.)
type crashPoint struct {
	stage, op string
	fails     bool
}

func (c crashPoint) String() string {
	if c.fails {
		return c.stage + "-" + c.op + "-fails"
	}
	return c.stage + "-" + c.op
}

// crashPoints: every op that journals an intent, at every stage; an
// O_APPEND open and write after their reply is journaled (they journal
// no intent: a write's other stages are idempotent); and at the intent
// stage, each request the file system can refuse.
func crashPoints() []crashPoint {
	var points []crashPoint
	for _, st := range stages {
		for _, op := range []string{"create", "mknod", "mkdir", "symlink", "link", "unlink", "rmdir", "rename", "setxattr", "removexattr"} {
			points = append(points, crashPoint{st.name, op, false})
		}
	}
	points = append(points, crashPoint{"reply", "open", false}, crashPoint{"reply", "write", false})
	for _, op := range []string{"rmdir", "rename"} {
		points = append(points, crashPoint{"intent", op, true})
	}
	return points
}

// modelOps is the length of a case's sequence.
const modelOps = 40

// TestCrashAgainstModel runs one case per crash point, with seeds 1 to
// 34: a fresh supervised mount whose server dies in the request the
// point names, and a random sequence of operations that holds one, each
// checked against the model as it returns, and the tree against it at
// the end.
func TestCrashAgainstModel(t *testing.T) {
	points := crashPoints()
	seeds := make([]uint64, len(points))
	for i := range seeds {
		seeds[i] = uint64(i + 1)
	}
	if s := os.Getenv("SHOAL_SEED"); s != "" {
		seed, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("SHOAL_SEED=%q: %v", s, err)
		}
		seeds = []uint64{seed}
	}
	if s := os.Getenv("SHOAL_SEEDS"); s != "" { // FROM-TO: a longer sweep
		var from, to uint64
		if _, err := fmt.Sscanf(s, "%d-%d", &from, &to); err != nil || from > to {
			t.Fatalf("SHOAL_SEEDS=%q: want FROM-TO", s)
		}
		seeds = seeds[:0]
		for seed := from; seed <= to; seed++ {
			seeds = append(seeds, seed)
		}
	}
	for _, seed := range seeds {
		c := points[int(seed%uint64(len(points)))]
		t.Run(fmt.Sprintf("seed%d-%s", seed, c), func(t *testing.T) { crashCase(t, seed, c) })
	}
}

// crashCase runs seed's sequence on a mount whose server dies at c, after
// a prelude (a directory and a few names in it and beside it) made
// through a mount without the hook.
func crashCase(t *testing.T, seed uint64, c crashPoint) {
	prelude, plan, want := planCase(seed, c)
	at := caught(plan, c)
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d (SHOAL_SEED=%d), the server dies at the %s stage of op %d (%s): %s",
			seed, seed, c.stage, at, plan[at], fmt.Sprintf(format, args...))
	}
	v := testutil.NewVolume(t)
	pre := v.Mount(t)
	var done strings.Builder
	runOps(pre, prelude, "p", &done, fail)
	pre.Unmount(t)
	m, crashed := crashOn(t, v, c.stage, c.op, logged(c.stage, plan[at]))
	runOps(m, plan, "", &done, fail)
	crashed()
	gotTree, err := dumpTree(otherMount(t, m).Path())
	if err != nil {
		t.Fatal(err)
	}
	if wantTree := want.dump(); gotTree != wantTree {
		fail("the tree read through a second mount is\n%s\nthe model's is\n%s\nafter\n%s", gotTree, wantTree, done.String())
	}
}

// logged is what the successor logs when it answers o resent after a
// crash at stage: "" for one that had not committed, or a setxattr
// without XATTR_CREATE, which runs again.
func logged(stage string, o modelOp) string {
	if stage == "commit" && o.kind == "setxattr" && o.flags&unix.XATTR_CREATE == 0 {
		return ""
	}
	for _, st := range stages {
		if st.name == stage {
			return st.logged
		}
	}
	return ""
}

// TestModelMatchesKernel runs the cases' sequences in a directory of the
// local file system, without a crash: Linux must answer as the model
// says, so that a case failing on a mount is the mount's fault.
func TestModelMatchesKernel(t *testing.T) {
	for seed := uint64(1); seed <= uint64(len(crashPoints())); seed++ {
		prelude, plan, want := planCase(seed, crashPoints()[int(seed)%len(crashPoints())])
		root := t.TempDir()
		if err := unix.Setxattr(root, "user.probe", nil, 0); err != nil {
			t.Skipf("the local file system (%s) has no user xattrs: %v", root, err)
		}
		for i, o := range append(prelude, plan...) {
			if got := o.run(root); testutil.Errno(got) != o.want {
				t.Fatalf("seed %d, op %d, %s: Linux says %s, the model %s", seed, i, o, errName(got), errName(o.want))
			}
		}
		got, err := dumpTree(root)
		if err != nil {
			t.Fatal(err)
		}
		if got != want.dump() {
			t.Fatalf("seed %d: Linux made the tree\n%s\nthe model\n%s", seed, got, want.dump())
		}
	}
}

// runOps runs ops in m, logging them to done, and fails at the first
// whose outcome is not the model's.
func runOps(m *testutil.Mount, ops []modelOp, tag string, done *strings.Builder, fail func(string, ...any)) {
	for i, o := range ops {
		got := o.run(m.Path())
		fmt.Fprintf(done, "  %s%2d %s: want %s, got %s\n", tag, i, o, errName(o.want), errName(got))
		if testutil.Errno(got) != o.want {
			fail("op %s%d, %s, returned %s, the model says %s\n%s\n%s", tag, i, o, errName(got), errName(o.want), done.String(), m.LogText())
		}
	}
}

// planCase draws seed's prelude and sequence, and returns them with the
// model after them. It draws again until the sequence holds a request
// that crashes at c (caught).
func planCase(seed uint64, c crashPoint) (prelude, plan []modelOp, mod *model) {
	rng := rand.New(rand.NewPCG(seed, 0x5ba1))
	for {
		mod = newModel()
		prelude = []modelOp{{kind: "mkdir", path: "d"}}
		for i := 0; i < preludeOps; i++ {
			prelude = append(prelude, drawOp(rng, preludeKinds[rng.IntN(len(preludeKinds))], -1-i))
		}
		for i := range prelude {
			prelude[i].want = mod.apply(&prelude[i])
		}
		plan = nil
		for i := 0; i < modelOps; i++ {
			kind := weightedKinds[rng.IntN(len(weightedKinds))]
			if rng.IntN(4) == 0 {
				kind = kindOf(c.op)
			}
			o := drawOp(rng, kind, i)
			o.want = mod.apply(&o)
			plan = append(plan, o)
		}
		if caught(plan, c) >= 0 {
			return prelude, plan, mod
		}
	}
}

// caught returns the index of the op in plan whose request the server
// dies in at c, -1 if there is none or it is not as c says: the first of
// c's op kind that reaches the file system (at the commit and reply
// stages, one that succeeds). A create writes, and an O_APPEND write
// opens: a case crashing at a write's reply must catch an O_APPEND one,
// which the successor answers from the journal (it replayed the write).
func caught(plan []modelOp, c crashPoint) int {
	for i, o := range plan {
		kind := o.kind == kindOf(c.op) || (c.op == "write" && o.kind == "create")
		if !kind || !o.served || (c.stage != "intent" && o.want != 0) {
			continue
		}
		if (o.want != 0) != c.fails || (c.op == "write" && o.kind != "append") {
			return -1
		}
		return i
	}
	return -1
}

// preludeOps is the length of the prelude after its mkdir.
const preludeOps = 6

var preludeKinds = []string{"create", "create", "mkdir", "symlink", "mknod", "link", "setxattr"}

// kindOf is the modelOp kind a hook's op names: an O_APPEND write opens
// the file and writes it.
func kindOf(op string) string {
	switch op {
	case "open", "write":
		return "append"
	}
	return op
}

// weightedKinds are the kinds a sequence draws from: more of those that
// make names than of those that remove them, for a tree that stays full.
var weightedKinds = []string{"create", "create", "create", "mknod", "mkdir", "mkdir", "symlink", "link", "link",
	"unlink", "rmdir", "rename", "rename", "rename", "rename", "setxattr", "setxattr", "removexattr", "append", "append"}

// modelNames is the name space: three names at the root, one of them
// (usually) a directory holding the other three.
var modelNames = []string{"a", "b", "d", "d/a", "d/b", "d/c"}

// modelOp is one operation of a sequence and its predicted outcome.
type modelOp struct {
	kind  string
	path  string // the path it acts on (a rename's or link's old one)
	to    string // a rename's or link's new path
	flags int    // a rename's or setxattr's flags
	key   string // xattr name
	data  string // bytes written, xattr value, symlink target
	want  syscall.Errno
	// served: the request reaches the file system (the kernel answers
	// the others itself: a name that exists, a type, a trap, a rename
	// between two names of one inode).
	served bool
	noop   bool // a rename between two names of one inode: success, nothing done
}

func drawOp(rng *rand.Rand, kind string, i int) modelOp {
	pick := func() string { return modelNames[rng.IntN(len(modelNames))] }
	o := modelOp{kind: kind, path: pick()}
	switch kind {
	case "create":
		o.data = fmt.Sprintf("created %d;", i)
	case "append":
		o.data = fmt.Sprintf("appended %d;", i)
	case "symlink":
		o.data = fmt.Sprintf("nowhere/%d", i) // dangling: never a directory on a path
	case "link":
		o.to = pick()
	case "rename":
		o.to = pick()
		o.flags = []int{0, 0, unix.RENAME_NOREPLACE, unix.RENAME_EXCHANGE}[rng.IntN(4)]
	case "setxattr":
		o.key = []string{"user.k1", "user.k2"}[rng.IntN(2)]
		o.data = fmt.Sprintf("v%d", i)
		o.flags = []int{unix.XATTR_CREATE, unix.XATTR_CREATE, 0}[rng.IntN(3)]
	case "removexattr":
		o.key = []string{"user.k1", "user.k2"}[rng.IntN(2)]
	}
	return o
}

func (o modelOp) String() string {
	switch o.kind {
	case "create", "append":
		return fmt.Sprintf("%s %s %q", o.kind, o.path, o.data)
	case "symlink":
		return fmt.Sprintf("symlink %s -> %s", o.path, o.data)
	case "link":
		return fmt.Sprintf("link %s %s", o.path, o.to)
	case "rename":
		flag := map[int]string{0: "", unix.RENAME_NOREPLACE: " NOREPLACE", unix.RENAME_EXCHANGE: " EXCHANGE"}[o.flags]
		return fmt.Sprintf("rename%s %s %s", flag, o.path, o.to)
	case "setxattr":
		flag := map[int]string{0: "", unix.XATTR_CREATE: " CREATE"}[o.flags]
		return fmt.Sprintf("setxattr%s %s %s=%s", flag, o.path, o.key, o.data)
	case "removexattr":
		return fmt.Sprintf("removexattr %s %s", o.path, o.key)
	}
	return o.kind + " " + o.path
}

// run does o in the tree under root and returns its error.
func (o modelOp) run(root string) error {
	p, to := filepath.Join(root, o.path), filepath.Join(root, o.to)
	switch o.kind {
	case "create":
		return writeFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, o.data)
	case "append":
		// O_NONBLOCK: a FIFO's open fails with ENXIO instead of waiting
		// for a reader.
		return writeFile(p, os.O_WRONLY|os.O_APPEND|syscall.O_NONBLOCK, o.data)
	case "mknod":
		return unix.Mkfifo(p, 0o644)
	case "mkdir":
		return unix.Mkdir(p, 0o755)
	case "symlink":
		return unix.Symlink(o.data, p)
	case "link":
		return unix.Link(p, to)
	case "unlink":
		return unix.Unlink(p)
	case "rmdir":
		return unix.Rmdir(p)
	case "rename":
		return unix.Renameat2(unix.AT_FDCWD, p, unix.AT_FDCWD, to, uint(o.flags))
	case "setxattr":
		return unix.Setxattr(p, o.key, []byte(o.data), o.flags)
	case "removexattr":
		return unix.Removexattr(p, o.key)
	}
	panic("unknown op " + o.kind)
}

func writeFile(path string, flags int, data string) error {
	f, err := os.OpenFile(path, flags, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func errName(err error) string {
	if err == nil {
		return "ok"
	}
	if e, ok := err.(syscall.Errno); ok {
		if e == 0 {
			return "ok"
		}
		return unix.ErrnoName(e)
	}
	if e := testutil.Errno(err); e != testutil.NotErrno {
		return unix.ErrnoName(e)
	}
	return err.Error()
}
