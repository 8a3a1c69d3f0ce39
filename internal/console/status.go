package console

import (
	"cmp"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"shoal/internal/meta"
	"shoal/internal/secret"
)

// Status is everything the console shows, as /api/status serves it.
type Status struct {
	Generated time.Time        `json:"generated"`
	Volume    Volume           `json:"volume"`
	Usage     Usage            `json:"usage"`
	Quotas    []Quota          `json:"quotas"`
	Mounts    []Mount          `json:"mounts"`
	Slow      []SlowOp         `json:"slow_ops"`
	Runs      []meta.RunRecord `json:"runs"`
	Reports   []Report         `json:"reports"`
	// Writable says whether the write actions are offered (a token is
	// configured); the actions still require the token.
	Writable bool `json:"writable"`
}

// Volume is the volume's settings, secrets masked.
type Volume struct {
	Name        string    `json:"name"`
	UUID        string    `json:"uuid"`
	Version     int       `json:"version"`
	Storage     string    `json:"storage"`
	Bucket      string    `json:"bucket"`
	BlockSize   int       `json:"block_size"`
	Compression string    `json:"compression,omitempty"`
	Encrypted   bool      `json:"encrypted"`
	Created     time.Time `json:"created"`
}

// Usage is the volume's space and inodes; a zero limit is unlimited.
type Usage struct {
	UsedSpace   uint64 `json:"used_space"`
	SpaceLimit  uint64 `json:"space_limit"`
	UsedInodes  uint64 `json:"used_inodes"`
	InodesLimit uint64 `json:"inodes_limit"`
}

// Quota is one directory quota; a zero limit is unlimited.
type Quota struct {
	Ino         uint64 `json:"ino"`
	UsedSpace   uint64 `json:"used_space"`
	SpaceLimit  uint64 `json:"space_limit"`
	UsedInodes  uint64 `json:"used_inodes"`
	InodesLimit uint64 `json:"inodes_limit"`
}

// Mount is one live client session and what it last reported.
type Mount struct {
	meta.SessionInfo
	// Uptime is measured on the console's clock (from the mount's own
	// start time), HeartbeatAge on the engine's (meta.EngineClock), as
	// the reclaimers judge it.
	Uptime       time.Duration `json:"uptime"`
	HeartbeatAge time.Duration `json:"heartbeat_age"`
	// Dead: silent for longer than its own timeout; any mount reclaims
	// it at its next heartbeat, or the console's reclaim action now.
	Dead bool `json:"dead"`
}

// SlowOp is a slow operation and the mount that served it.
type SlowOp struct {
	meta.SlowOp
	Session meta.SessionID `json:"session"`
	Host    string         `json:"host"`
}

// Report is a benchmark report in the reports directory.
type Report struct {
	Name     string    `json:"name"`
	Size     int64     `json:"size"`
	Modified time.Time `json:"modified"`
}

// collect reads the status from the engine and the reports directory.
func (s *Server) collect(ctx context.Context) (Status, error) {
	now := time.Now()
	st := Status{Generated: now.UTC(), Volume: volumeOf(s.cfg.Format), Writable: s.cfg.Token != ""}
	fs, err := s.cfg.Engine.Statfs(ctx)
	if err != nil {
		return st, err
	}
	st.Usage = usageOf(s.cfg.Format, fs)
	if st.Quotas, err = s.quotas(ctx); err != nil {
		return st, err
	}
	if st.Mounts, err = s.mounts(ctx, now); err != nil {
		return st, err
	}
	st.Slow = slowOps(st.Mounts)
	if st.Runs, err = s.runs(ctx); err != nil {
		return st, err
	}
	st.Reports = listReports(s.cfg.ReportsDir)
	return st, nil
}

func volumeOf(f meta.Format) Volume {
	return Volume{
		Name: f.Name, UUID: f.UUID, Version: f.Version, Storage: f.Storage,
		Bucket: secret.Mask(f.Bucket), BlockSize: f.BlockSize, Compression: f.Compression,
		Encrypted: f.Encryption != nil, Created: f.Created,
	}
}

// usageOf reports the limits the volume was formatted with (0 when none,
// not the large totals Statfs reports for an unlimited volume).
func usageOf(f meta.Format, fs meta.Statfs) Usage {
	u := Usage{UsedSpace: fs.UsedSpace, UsedInodes: fs.UsedInodes}
	if f.Capacity != 0 {
		u.SpaceLimit = fs.TotalSpace
	}
	if f.Inodes != 0 {
		u.InodesLimit = fs.TotalInodes
	}
	return u
}

func (s *Server) quotas(ctx context.Context) ([]Quota, error) {
	out := []Quota{}
	q, ok := s.cfg.Engine.(meta.Quotas)
	if !ok {
		return out, nil
	}
	list, err := q.ListQuotas(ctx)
	for _, x := range list {
		out = append(out, Quota{Ino: uint64(x.Ino), UsedSpace: x.UsedSpace, SpaceLimit: x.MaxSpace,
			UsedInodes: x.UsedInodes, InodesLimit: x.MaxInodes})
	}
	return out, err
}

func (s *Server) mounts(ctx context.Context, now time.Time) ([]Mount, error) {
	out := []Mount{}
	ss, ok := s.cfg.Engine.(meta.Sessions)
	if !ok {
		return out, nil
	}
	list, err := ss.ListSessions(ctx)
	if err != nil {
		return out, err
	}
	engineNow := now
	if c, ok := s.cfg.Engine.(meta.EngineClock); ok {
		if engineNow, err = c.EngineNow(ctx); err != nil {
			return out, err
		}
	}
	for _, si := range list {
		// Heartbeats are stamped on the engine's clock, so their age is
		// read on it too; Started is the mount's own clock.
		m := Mount{SessionInfo: si, Uptime: now.Sub(si.Started), HeartbeatAge: engineNow.Sub(si.Heartbeat)}
		timeout := cmp.Or(si.Timeout, meta.LegacySessionTimeout)
		m.Dead = m.HeartbeatAge > timeout
		out = append(out, m)
	}
	return out, nil
}

// maxSlowShown bounds the slow operations listed (each mount reports up
// to opstat.Keep).
const maxSlowShown = 15

// slowOps merges the mounts' slow operations, slowest first, up to
// maxSlowShown.
func slowOps(mounts []Mount) []SlowOp {
	out := []SlowOp{}
	for _, m := range mounts {
		if m.Report == nil {
			continue
		}
		for _, op := range m.Report.Slow {
			out = append(out, SlowOp{SlowOp: op, Session: m.ID, Host: m.Host})
		}
	}
	slices.SortFunc(out, func(a, b SlowOp) int { return cmp.Compare(b.Duration, a.Duration) })
	return out[:min(len(out), maxSlowShown)]
}

func (s *Server) runs(ctx context.Context) ([]meta.RunRecord, error) {
	rl, ok := s.cfg.Engine.(meta.RunLog)
	if !ok {
		return []meta.RunRecord{}, nil
	}
	runs, err := rl.Runs(ctx)
	if runs == nil {
		runs = []meta.RunRecord{}
	}
	return runs, err
}

// listReports lists the HTML files of dir, newest first; none when dir is
// unset or unreadable.
func listReports(dir string) []Report {
	out := []Report{}
	if dir == "" {
		return out
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".html") {
			continue
		}
		if info, err := e.Info(); err == nil {
			out = append(out, Report{Name: e.Name(), Size: info.Size(), Modified: info.ModTime().UTC()})
		}
	}
	slices.SortFunc(out, func(a, b Report) int { return b.Modified.Compare(a.Modified) })
	return out
}

// reportPath is the file of report name in dir, or "" if name is not a
// plain .html file name (no path may escape the directory).
func reportPath(dir, name string) string {
	if dir == "" || name != filepath.Base(name) || !strings.HasSuffix(name, ".html") || strings.HasPrefix(name, ".") {
		return ""
	}
	return filepath.Join(dir, name)
}
