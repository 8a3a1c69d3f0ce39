package secret

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestMaskURLs(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"postgres://shoal:PgS3cret@db:5432/shoal", "postgres://shoal:xxxxx@db:5432/shoal"},
		{"redis://:pw@127.0.0.1:6379/1", "redis://:xxxxx@127.0.0.1:6379/1"},
		{"error at postgres://u:p%40ss@h/db: refused", "error at postgres://u:xxxxx@h/db: refused"},
		{"http://KEY:SECRET@host/b and https://a:b@c/d", "http://KEY:xxxxx@host/b and https://a:xxxxx@c/d"},
		{"postgres://h/db?sslmode=disable&password=hunter2", "postgres://h/db?sslmode=disable&password=xxxxx"},
		{"sqlite:///var/lib/shoal/meta.db", "sqlite:///var/lib/shoal/meta.db"},
		{"http://127.0.0.1:9000/bucket/a@b", "http://127.0.0.1:9000/bucket/a@b"},
		{"postgres://shoal@db/shoal", "postgres://shoal@db/shoal"},
	} {
		if got := Mask(c.in); got != c.want {
			t.Errorf("Mask(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestMaskRegistered(t *testing.T) {
	Register("Reg1stered/Secret", "ab") // "ab" is too short to mask words
	got := Mask("pgx: bad password Reg1stered/Secret; tab: Reg1stered%2FSecret")
	if strings.Contains(got, "Reg1stered") || !strings.Contains(got, "tab") {
		t.Fatalf("Mask = %q", got)
	}
}

func TestSplitAndWithPassword(t *testing.T) {
	s, pw := Split("postgres://shoal:p%2Fw@db:5432/shoal?sslmode=disable")
	if s != "postgres://shoal@db:5432/shoal?sslmode=disable" || pw != "p/w" {
		t.Fatalf("Split = %q, %q", s, pw)
	}
	if got := WithPassword(s, pw); got != "postgres://shoal:p%2Fw@db:5432/shoal?sslmode=disable" {
		t.Fatalf("WithPassword = %q", got)
	}
	if got := WithPassword("redis://127.0.0.1:6379/0", "pw"); got != "redis://:pw@127.0.0.1:6379/0" {
		t.Fatalf("WithPassword(redis) = %q", got)
	}
	odd := WithPassword("redis+sentinel://h1:26379,h2:26379/0?master=m", "a@b:c/d")
	if s, pw := Split(odd); pw != "a@b:c/d" || s != "redis+sentinel://h1:26379,h2:26379/0?master=m" {
		t.Fatalf("round trip through %q = %q, %q", odd, s, pw)
	}
	for _, keep := range []string{"postgres://u:own@h/db", "sqlite:///a/b.db"} {
		if got := WithPassword(keep, "env"); got != keep {
			t.Fatalf("WithPassword(%q) = %q", keep, got)
		}
	}
	if s, ok := StripUserinfo("http://K:S@h:9000/b/p"); !ok || s != "http://h:9000/b/p" {
		t.Fatalf("StripUserinfo = %q, %v", s, ok)
	}
}

func TestPasswordFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "pw")
	if err := os.WriteFile(p, []byte("s3cret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := PasswordFile(p); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("PasswordFile(0644) = %v, want a refusal naming chmod 600", err)
	}
	if err := os.Chmod(p, 0o600); err != nil {
		t.Fatal(err)
	}
	if pw, err := PasswordFile(p); err != nil || pw != "s3cret" {
		t.Fatalf("PasswordFile(0600) = %q, %v", pw, err)
	}
}

func TestMaskedFitAndOverwrite(t *testing.T) {
	arg := "postgres://u:pw@h/db"
	if got := maskedFit(arg, Mask(arg)); got != "postgres://u:xx@h/db" {
		t.Fatalf("maskedFit(short) = %q", got)
	}
	long := "postgres://u:longpassword@h/db"
	buf := []byte(long)
	s := unsafeString(buf)
	overwrite(s, maskedFit(long, Mask(long)))
	if got := strings.TrimRight(string(buf), "\x00"); got != "postgres://u:xxxxx@h/db" {
		t.Fatalf("overwritten = %q", got)
	}
}
