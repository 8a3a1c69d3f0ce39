package testutil

import "testing"

func TestParseMountInfo(t *testing.T) {
	line := `36 35 0:44 / /tmp/shoal-test-1/vol-2/mnt\040x rw,nosuid,nodev,relatime shared:1 - fuse.shoal shoal rw,user_id=0,group_id=0`
	mi, ok := parseMountInfo(line)
	if !ok {
		t.Fatal("not parsed")
	}
	if mi.Point != "/tmp/shoal-test-1/vol-2/mnt x" || mi.FSType != "fuse.shoal" || mi.Source != "shoal" {
		t.Fatalf("got %+v", mi)
	}
	if _, ok := parseMountInfo("garbage"); ok {
		t.Fatal("garbage parsed")
	}
}

func TestUnescapeOctal(t *testing.T) {
	for in, want := range map[string]string{
		`/a\040b`: "/a b",
		`/a\011`:  "/a\t",
		`/plain`:  "/plain",
		`/bad\0`:  `/bad\0`,
		`\134`:    `\`,
	} {
		if got := unescapeOctal(in); got != want {
			t.Errorf("unescapeOctal(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestMountsParsesSelf(t *testing.T) {
	ms, err := Mounts()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, m := range ms {
		if m.Point == "/" {
			found = true
		}
	}
	if !found {
		t.Fatalf("no / in %d mounts", len(ms))
	}
}
