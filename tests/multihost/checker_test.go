package multihost

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Knobs of the cross-mount checker.
const (
	checkNames    = 10                     // file names in play
	checkHolds    = 3                      // descriptors held open at most
	checkMaxIO    = 96 << 10               // largest write
	checkPause    = 40                     // ops between pauses that let every name settle
	checkSlack    = 500 * time.Millisecond // kernel timeouts run in jiffies, checks on a busy machine
	defaultTTL    = time.Second            // the mounts' default --entry-timeout and --attr-timeout
	checkOpsEnv   = "SHOAL_CHECK_OPS"
	checkOpsValue = 300
)

// TestCrossMountChecker runs randomized operations on two mounts of one
// volume (each its own `shoal mount` process, each driven by its own
// agent process) and checks every outcome against the model of the
// promised semantics (model_test.go): appends, overwrites, truncates,
// O_TRUNC rewrites, creates, renames (over existing files too), unlinks,
// and files held open on one mount while the other unlinks or renames
// over them. The mounts keep their default kernel caches, and reads come
// right after the other mount stat'ed or read the old version, so stale
// caches have every chance to show. SHOAL_SEED sets the seed (default 1),
// SHOAL_CHECK_OPS the operation count (default 300).
func TestCrossMountChecker(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ms := mountN(t, b.newVolume(t), 2)
		runChecker(t, []string{ms[0].Dir, ms[1].Dir})
	})
}

// runChecker drives the checker over one directory per mount (the same
// directory of the volume seen through each). fault, if given, is called
// before each operation with its number.
func runChecker(t *testing.T, dirs []string, fault ...func(step int)) {
	seed := uint64(envInt("SHOAL_SEED", 1))
	ops := envInt(checkOpsEnv, checkOpsValue)
	t.Logf("seed %d (SHOAL_SEED), %d operations (%s)", seed, ops, checkOpsEnv)
	c := &checker{
		t:     t,
		rng:   rand.New(rand.NewPCG(seed, seed+1)),
		dirs:  dirs,
		m:     newModel(defaultTTL+checkSlack, defaultTTL+checkSlack),
		holds: map[int]*hold{},
		fault: fault,
	}
	for i := range dirs {
		c.agents = append(c.agents, startAgent(t, fmt.Sprintf("m%d", i)))
	}
	c.run(ops)
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

// hold is a descriptor an agent keeps open.
type hold struct {
	mnt  int
	file *modelFile
	// foreign: another mount wrote the file since it was opened, so its
	// reads may show either (close-to-open promises nothing there).
	foreign bool
}

type checker struct {
	t      *testing.T
	rng    *rand.Rand
	dirs   []string
	agents []*agent
	m      *model
	holds  map[int]*hold
	nextH  int
	step   int
	trail  []string
	fault  []func(step int)
}

func (c *checker) run(ops int) {
	for c.step = 1; c.step <= ops && !c.t.Failed(); c.step++ {
		if c.step%checkPause == 0 {
			time.Sleep(c.m.window)
		}
		for _, f := range c.fault {
			f(c.step)
		}
		c.one()
	}
	if !c.t.Failed() {
		c.finish()
	}
}

// one runs one random operation whose preconditions hold.
func (c *checker) one() {
	type op struct {
		weight int
		run    func(mnt int) bool
	}
	table := []op{
		{25, c.read}, {10, c.stat}, {25, c.write}, {8, c.create}, {6, c.rename},
		{5, c.unlink}, {6, c.hold}, {8, c.holdIO}, {4, c.release}, {4, c.list},
	}
	total := 0
	for _, o := range table {
		total += o.weight
	}
	for {
		n, mnt := c.rng.IntN(total), c.rng.IntN(len(c.dirs))
		for _, o := range table {
			if n -= o.weight; n < 0 {
				if o.run(mnt) {
					return
				}
				break
			}
		}
	}
}

// do runs req on mount mnt's agent, timing it and keeping a trail.
func (c *checker) do(mnt int, req agentReq) (agentResp, span) {
	c.t.Helper()
	s := span{start: time.Now()}
	r := c.agents[mnt].do(req)
	s.end = time.Now()
	what := fmt.Sprintf("#%d m%d %s %s", c.step, mnt, req.Op, filepath.Base(req.Path))
	if req.To != "" {
		what += " -> " + filepath.Base(req.To)
	}
	if req.Mode != "" {
		what += " " + req.Mode
	}
	if req.H != 0 {
		what += fmt.Sprintf(" h%d", req.H)
	}
	what += fmt.Sprintf(" off=%d n=%d: err=%q ino=%d size=%d read=%d", req.Off, req.N, r.Err, r.Ino, r.Size, r.Read)
	c.trail = append(c.trail, what)
	if len(c.trail) > 40 {
		c.trail = c.trail[1:]
	}
	return r, s
}

// fail reports a violation with the trail of operations that led to it.
func (c *checker) fail(format string, args ...any) {
	c.t.Helper()
	c.t.Fatalf("step %d: %s\nlast operations:\n  %s", c.step, fmt.Sprintf(format, args...), strings.Join(c.trail, "\n  "))
}

func (c *checker) path(mnt int, name string) string { return filepath.Join(c.dirs[mnt], name) }

// pickName returns a random name; existing asks for one that exists now,
// settled for one whose every cached state on mnt is the current one.
func (c *checker) pickName(mnt int, existing, settled bool) (string, bool) {
	start := c.rng.IntN(checkNames)
	for i := range checkNames {
		name := fmt.Sprintf("f%d", (start+i)%checkNames)
		if existing && c.m.current(name) == 0 {
			continue
		}
		if settled && !c.m.settledFor(name, mnt, time.Now()) {
			continue
		}
		return name, true
	}
	return "", false
}

// size picks a write size: mostly small, sometimes large, sometimes zero.
func (c *checker) size() int {
	switch c.rng.IntN(10) {
	case 0:
		return 0
	case 1, 2:
		return c.rng.IntN(checkMaxIO) + 1
	}
	return c.rng.IntN(4096) + 1
}

// read opens a file by name and checks that what fstat and read return
// is the file's latest committed content (strict close-to-open).
func (c *checker) read(mnt int) bool {
	name, ok := c.pickName(mnt, c.rng.IntN(5) > 0, false)
	if !ok {
		return false
	}
	r, s := c.do(mnt, agentReq{Op: "read", Path: c.path(mnt, name)})
	f, err := c.m.resolve(name, s, r)
	if err != nil {
		c.fail("read: %v", err)
	}
	if f != nil {
		c.checkContent("read "+name, f, r)
	}
	return true
}

// checkContent checks fstat's size and the bytes read against f.
func (c *checker) checkContent(what string, f *modelFile, r agentResp) {
	c.t.Helper()
	if r.Size != int64(len(f.data)) {
		c.fail("%s (file %d): fstat size %d, want %d (close-to-open: an older size)", what, f.id, r.Size, len(f.data))
	}
	if r.Read != len(f.data) || r.Sum != sumOf(f.data) {
		c.fail("%s (file %d): read %d bytes that differ from the %d committed", what, f.id, r.Read, len(f.data))
	}
}

// stat checks stat(2) by name: a size the file had within the attribute
// timeout.
func (c *checker) stat(mnt int) bool {
	name, ok := c.pickName(mnt, true, false)
	if !ok {
		return false
	}
	r, s := c.do(mnt, agentReq{Op: "stat", Path: c.path(mnt, name)})
	f, err := c.m.resolve(name, s, r)
	if err != nil {
		c.fail("stat: %v", err)
	}
	if f != nil && !c.m.sizeAllowed(f, r.Size, s) {
		c.fail("stat %s (file %d): size %d, which it did not have within %v (now %d)", name, f.id, r.Size, c.m.attrWin, len(f.data))
	}
	return true
}

// write opens a file by name and appends, overwrites, truncates or
// rewrites it, then closes it.
func (c *checker) write(mnt int) bool {
	name, ok := c.pickName(mnt, true, false)
	if !ok {
		return false
	}
	cur := c.m.files[c.m.current(name)]
	req := agentReq{Op: "write", Path: c.path(mnt, name), Seed: c.rng.Uint64(), N: c.size()}
	switch c.rng.IntN(8) {
	case 0, 1, 2:
		req.Mode = "append"
	case 3, 4:
		req.Mode = "overwrite"
		req.Off = int64(c.rng.IntN(len(cur.data) + 4096))
	case 5, 6:
		req.Mode = "trunc"
		req.N = c.rng.IntN(len(cur.data) + 8192)
	default:
		req.Mode = "otrunc"
	}
	r, s := c.do(mnt, req)
	f, err := c.m.resolve(name, s, r)
	if err != nil {
		c.fail("write: %v", err)
	}
	if f == nil {
		return true
	}
	data := applyWrite(f.data, req)
	if r.Size != int64(len(data)) {
		c.fail("write %s %s (file %d): fstat before close gave size %d, want %d", name, req.Mode, f.id, r.Size, len(data))
	}
	c.changed(f, data, s, mnt)
	return true
}

// changed records f's new content, written on mount mnt.
func (c *checker) changed(f *modelFile, data []byte, s span, mnt int) {
	c.m.setData(f, data, s)
	for _, h := range c.holds {
		if h.file == f && h.mnt != mnt {
			h.foreign = true
		}
	}
}

// create makes a new file under a free name.
func (c *checker) create(mnt int) bool {
	name, ok := c.pickFree(mnt)
	if !ok {
		return false
	}
	req := agentReq{Op: "create", Path: c.path(mnt, name), Seed: c.rng.Uint64(), N: c.size()}
	r, s := c.do(mnt, req)
	if r.Err != "" {
		c.fail("create %s: %s (the name has been free on this mount for %v)", name, r.Err, c.m.window)
	}
	if id, ok := c.m.byIno[r.Ino]; ok && !c.m.files[id].gone {
		c.fail("create %s: inode %d is file %d's, which still exists", name, r.Ino, id)
	}
	f := c.m.newFile(r.Ino, randBytes(req.Seed, req.N), s)
	f.links = 1
	c.m.setName(name, f.id, s, mnt)
	return true
}

// pickFree returns a settled name that does not exist.
func (c *checker) pickFree(mnt int) (string, bool) {
	start := c.rng.IntN(checkNames)
	for i := range checkNames {
		name := fmt.Sprintf("f%d", (start+i)%checkNames)
		if c.m.current(name) == 0 && c.m.settledFor(name, mnt, time.Now()) {
			return name, true
		}
	}
	return "", false
}

// rename moves a file to another name, replacing a file there if any.
func (c *checker) rename(mnt int) bool {
	src, ok1 := c.pickName(mnt, true, true)
	dst, ok2 := c.pickName(mnt, false, true)
	if !ok1 || !ok2 || src == dst {
		return false
	}
	r, s := c.do(mnt, agentReq{Op: "rename", Path: c.path(mnt, src), To: c.path(mnt, dst)})
	if r.Err != "" {
		c.fail("rename %s -> %s: %s", src, dst, r.Err)
	}
	id, old := c.m.current(src), c.m.current(dst)
	c.m.setName(dst, id, s, mnt)
	c.m.setName(src, 0, s, mnt)
	c.m.unlinkName(old)
	return true
}

// unlink removes a name.
func (c *checker) unlink(mnt int) bool {
	name, ok := c.pickName(mnt, true, true)
	if !ok {
		return false
	}
	r, s := c.do(mnt, agentReq{Op: "unlink", Path: c.path(mnt, name)})
	if r.Err != "" {
		c.fail("unlink %s: %s", name, r.Err)
	}
	id := c.m.current(name)
	c.m.setName(name, 0, s, mnt)
	c.m.unlinkName(id)
	return true
}

// list checks a directory listing: readdir asks the engine, so it shows
// exactly the names that exist now, whichever mount made them.
func (c *checker) list(mnt int) bool {
	r, _ := c.do(mnt, agentReq{Op: "list", Path: c.dirs[mnt]})
	if r.Err != "" {
		c.fail("list: %s", r.Err)
	}
	var want []string
	for i := range checkNames {
		if name := fmt.Sprintf("f%d", i); c.m.current(name) != 0 {
			want = append(want, name)
		}
	}
	if !slices.Equal(r.Names, want) {
		c.fail("list: %v, want %v", r.Names, want)
	}
	return true
}

// hold opens a file by name and keeps the descriptor.
func (c *checker) hold(mnt int) bool {
	name, ok := c.pickName(mnt, true, false)
	if !ok || len(c.holds) >= checkHolds {
		return false
	}
	c.nextH++
	r, s := c.do(mnt, agentReq{Op: "hold", Path: c.path(mnt, name), H: c.nextH})
	f, err := c.m.resolve(name, s, r)
	if err != nil {
		c.fail("hold: %v", err)
	}
	if f != nil {
		f.holders[c.nextH] = true
		c.holds[c.nextH] = &hold{mnt: mnt, file: f}
	}
	return true
}

// holdIO reads or writes (and fsyncs) through a held descriptor, which
// must work whatever other mounts did to the file's names meanwhile.
func (c *checker) holdIO(int) bool {
	h, id := c.someHold()
	if h == nil {
		return false
	}
	f := h.file
	if c.rng.IntN(2) == 0 {
		r, _ := c.do(h.mnt, agentReq{Op: "hread", H: id})
		if r.Err != "" {
			c.fail("read through held h%d (file %d, %d links): %s", id, f.id, f.links, r.Err)
		}
		if !h.foreign {
			c.checkContent(fmt.Sprintf("read through held h%d", id), f, r)
		}
		return true
	}
	req := agentReq{Op: "hwrite", H: id, Off: int64(c.rng.IntN(len(f.data) + 4096)), Seed: c.rng.Uint64(), N: c.size()}
	r, s := c.do(h.mnt, req)
	if r.Err != "" {
		c.fail("write through held h%d (file %d, %d links): %s", id, f.id, f.links, r.Err)
	}
	c.changed(f, pwrite(f.data, req.Off, randBytes(req.Seed, req.N)), s, h.mnt)
	return true
}

// someHold returns a random held descriptor.
func (c *checker) someHold() (*hold, int) {
	if len(c.holds) == 0 {
		return nil, 0
	}
	n := c.rng.IntN(len(c.holds))
	for id := 1; id <= c.nextH; id++ {
		if h, ok := c.holds[id]; ok {
			if n == 0 {
				return h, id
			}
			n--
		}
	}
	return nil, 0
}

// release closes a held descriptor.
func (c *checker) release(int) bool {
	h, id := c.someHold()
	if h == nil {
		return false
	}
	c.closeHold(h, id)
	return true
}

func (c *checker) closeHold(h *hold, id int) {
	r, _ := c.do(h.mnt, agentReq{Op: "release", H: id})
	if r.Err != "" {
		c.fail("close of held h%d (file %d): %s", id, h.file.id, r.Err)
	}
	delete(c.holds, id)
	delete(h.file.holders, id)
	c.m.maybeGone(h.file)
}

// finish closes every held descriptor, lets the caches expire, and then
// checks every name on every mount, and that no inode outlived its last
// name and last close (the inode count of the volume matches the model).
func (c *checker) finish() {
	for id := 1; id <= c.nextH; id++ {
		if h, ok := c.holds[id]; ok {
			c.closeHold(h, id)
		}
	}
	time.Sleep(c.m.window)
	c.step++
	for mnt := range c.dirs {
		for i := range checkNames {
			name := fmt.Sprintf("f%d", i)
			r, _ := c.do(mnt, agentReq{Op: "read", Path: c.path(mnt, name)})
			id := c.m.current(name)
			switch {
			case id == 0 && r.Err != "ENOENT":
				c.fail("final read of %s: %q, want ENOENT", name, r.Err)
			case id != 0 && r.Err != "":
				c.fail("final read of %s: %s", name, r.Err)
			case id != 0:
				c.checkContent("final read "+name, c.m.files[id], r)
			}
		}
	}
	c.checkInodes()
}

// checkInodes waits (a few seconds at most) until the volume's used inode
// count is the model's live files plus the root directory.
func (c *checker) checkInodes() {
	want := uint64(c.m.live() + 1)
	var used uint64
	deadline := time.Now().Add(10 * time.Second)
	for {
		var st syscall.Statfs_t
		if err := syscall.Statfs(c.dirs[0], &st); err != nil {
			c.fail("statfs: %v", err)
		}
		used = st.Files - st.Ffree
		if used == want || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if used != want {
		c.fail("the volume uses %d inodes after every descriptor was closed, want %d (%d files and the root)", used, want, want-1)
	}
	c.t.Logf("%d operations checked; %d files live, %d created", c.step-1, want-1, c.m.nextID)
}
