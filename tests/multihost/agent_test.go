package multihost

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// agentReq is one file operation for an agent process, sent as a JSON
// line. Data written is randBytes(Seed, N), so no file content crosses
// the pipe.
type agentReq struct {
	Op   string `json:"op"`
	Path string `json:"path,omitempty"`
	To   string `json:"to,omitempty"`   // rename target
	Mode string `json:"mode,omitempty"` // write: append|overwrite|trunc|otrunc
	Off  int64  `json:"off,omitempty"`
	Seed uint64 `json:"seed,omitempty"`
	N    int    `json:"n,omitempty"` // bytes written, or the new size for trunc
	H    int    `json:"h,omitempty"` // handle number (hold, hread, hwrite, release)
}

// agentResp is the answer: Err is "" or an errno name; Ino and Size come
// from fstat(2) (stat(2) for stat) on the file operated on; Sum and Read
// describe what a read returned.
type agentResp struct {
	Err  string `json:"err,omitempty"`
	Ino  uint64 `json:"ino,omitempty"`
	Size int64  `json:"size"`
	Sum  string `json:"sum,omitempty"`
	Read int    `json:"read"`
	// Names is what a list request found, sorted.
	Names []string `json:"names,omitempty"`
}

// helperAgent runs file operations for the cross-mount checker, one JSON
// request per line on stdin, one JSON answer per line on stdout. It keeps
// the files of hold requests open until their release (or its exit), so a
// file can be held open on one mount while another mount unlinks it.
//
//	create  O_CREAT|O_EXCL, write the data, close
//	write   open (O_APPEND for append, O_TRUNC for otrunc), then write,
//	        pwrite at Off (overwrite) or ftruncate to N (trunc), close
//	read    open, fstat, read to EOF, close
//	stat    stat(2)
//	rename, unlink
//	list    the names in directory Path (readdir)
//	hold    open O_RDWR and keep it as handle H
//	hread   fstat and pread the held file to EOF
//	hwrite  pwrite at Off through the held file, then fsync
//	release close handle H
func helperAgent(args []string) int {
	held := map[int]*os.File{}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<16), 1<<20)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var req agentReq
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			fmt.Fprintln(os.Stderr, "agent: bad request:", err)
			return 2
		}
		if err := out.Encode(agentDo(req, held)); err != nil {
			return 2
		}
	}
	return 0
}

// agentDo runs one request.
func agentDo(req agentReq, held map[int]*os.File) agentResp {
	var r agentResp
	var err error
	switch req.Op {
	case "create":
		err = agentCreate(req, &r)
	case "write":
		err = agentWrite(req, &r)
	case "read":
		err = agentRead(req, &r)
	case "stat":
		var st syscall.Stat_t
		if err = syscall.Stat(req.Path, &st); err == nil {
			r.Ino, r.Size = st.Ino, st.Size
		}
	case "rename":
		err = syscall.Rename(req.Path, req.To)
	case "unlink":
		err = syscall.Unlink(req.Path)
	case "list":
		var ents []os.DirEntry
		ents, err = os.ReadDir(req.Path)
		for _, e := range ents {
			r.Names = append(r.Names, e.Name())
		}
	case "hold":
		var f *os.File
		if f, err = os.OpenFile(req.Path, os.O_RDWR, 0); err == nil {
			held[req.H] = f
			err = fstatInto(f, &r)
		}
	case "hread":
		err = readAllInto(held[req.H], &r)
	case "hwrite":
		f := held[req.H]
		if _, err = f.WriteAt(randBytes(req.Seed, req.N), req.Off); err == nil {
			err = f.Sync()
		}
	case "release":
		err = held[req.H].Close()
		delete(held, req.H)
	default:
		err = fmt.Errorf("unknown op %q", req.Op)
	}
	r.Err = errText(err)
	if r.Err == "OK" {
		r.Err = ""
	}
	return r
}

func agentCreate(req agentReq, r *agentResp) error {
	f, err := os.OpenFile(req.Path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(randBytes(req.Seed, req.N))
	return closeAfter(f, firstError(err, fstatInto(f, r)))
}

func agentWrite(req agentReq, r *agentResp) error {
	flags := os.O_WRONLY
	switch req.Mode {
	case "append":
		flags |= os.O_APPEND
	case "otrunc":
		flags |= os.O_TRUNC
	}
	f, err := os.OpenFile(req.Path, flags, 0)
	if err != nil {
		return err
	}
	switch req.Mode {
	case "append", "otrunc":
		_, err = f.Write(randBytes(req.Seed, req.N))
	case "overwrite":
		_, err = f.WriteAt(randBytes(req.Seed, req.N), req.Off)
	case "trunc":
		err = f.Truncate(int64(req.N))
	}
	return closeAfter(f, firstError(err, fstatInto(f, r)))
}

func agentRead(req agentReq, r *agentResp) error {
	f, err := os.Open(req.Path)
	if err != nil {
		return err
	}
	return closeAfter(f, readAllInto(f, r))
}

// readAllInto fstats f, then reads it from offset 0 to EOF.
func readAllInto(f *os.File, r *agentResp) error {
	if f == nil {
		return syscall.EBADF
	}
	if err := fstatInto(f, r); err != nil {
		return err
	}
	h := sha256.New()
	n, err := io.Copy(h, io.NewSectionReader(f, 0, 1<<40))
	r.Read, r.Sum = int(n), hex.EncodeToString(h.Sum(nil))
	return err
}

func fstatInto(f *os.File, r *agentResp) error {
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		return err
	}
	r.Ino, r.Size = st.Ino, st.Size
	return nil
}

// closeAfter closes f and returns err, or close's error if err is nil:
// close(2) is where close-to-open commits.
func closeAfter(f *os.File, err error) error {
	return firstError(err, f.Close())
}

func firstError(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// sumOf is the checksum an agent reports for content b.
func sumOf(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// agent drives one helperAgent process.
type agent struct {
	t     *testing.T
	name  string
	cmd   *exec.Cmd
	in    *json.Encoder
	stdin io.WriteCloser
	out   chan agentResp
}

// startAgent starts an agent process; it is stopped when the test ends.
func startAgent(t *testing.T, name string) *agent {
	t.Helper()
	c, stdin, stdout := startHelperProc(t, "agent", name)
	a := &agent{t: t, name: name, cmd: c, in: json.NewEncoder(stdin), stdin: stdin, out: make(chan agentResp, 1)}
	go func() {
		dec := json.NewDecoder(stdout)
		for {
			var r agentResp
			if dec.Decode(&r) != nil {
				close(a.out)
				return
			}
			a.out <- r
		}
	}()
	t.Cleanup(a.stop)
	return a
}

// do runs one request and returns its answer; an agent that does not
// answer within a minute fails the test.
func (a *agent) do(req agentReq) agentResp {
	a.t.Helper()
	if err := a.in.Encode(req); err != nil {
		a.t.Fatalf("agent %s: send %+v: %v", a.name, req, err)
	}
	select {
	case r, ok := <-a.out:
		if !ok {
			a.t.Fatalf("agent %s exited on %+v", a.name, req)
		}
		return r
	case <-time.After(time.Minute):
		a.t.Fatalf("agent %s: no answer to %+v within a minute", a.name, req)
	}
	return agentResp{}
}

func (a *agent) stop() { stopHelperProc(a.cmd, a.stdin) }
