package kvmeta

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"

	"shoal/internal/meta/kv/memkv"
)

// TestDumpLeavesOutBucketCredentials: settings written by old versions
// with credentials in the bucket URL are dumped without them.
func TestDumpLeavesOutBucketCredentials(t *testing.T) {
	e, ctx := formatOn(t, memkv.New())
	f, err := e.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	f.Storage, f.Bucket = "s3", "http://AKEY:Dump5ecret@127.0.0.1:9000/b/p"
	if err := e.Format(ctx, f, true); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := e.Dump(ctx, &buf); err != nil {
		t.Fatal(err)
	}
	text := buf.String()
	for _, line := range strings.Split(text, "\n") {
		if i := strings.Index(line, `"v":"`); i >= 0 {
			v, _ := base64.StdEncoding.DecodeString(strings.TrimSuffix(line[i+5:], `"}`))
			text += "\n" + string(v)
		}
	}
	if strings.Contains(text, "Dump5ecret") || strings.Contains(text, "AKEY") {
		t.Fatalf("the dump carries the bucket's credentials")
	}
	if !strings.Contains(text, `"bucket":"http://127.0.0.1:9000/b/p"`) {
		t.Fatalf("the dump lost the bucket URL")
	}
}
