package rediskv

import (
	"strings"
	"testing"
	"time"
)

func TestParseURL(t *testing.T) {
	cases := []struct {
		url     string
		addrs   string
		db      int
		master  string
		cluster bool
		ns      string
		display string
	}{
		{"redis://127.0.0.1:6379/2", "127.0.0.1:6379", 2, "", false, "shoal", "redis://127.0.0.1:6379/2"},
		{"redis://:pw@localhost", "localhost:6379", 0, "", false, "shoal", "redis://localhost:6379"},
		{"rediss://user:pw@h:7000/1?ns=vol1", "h:7000", 1, "", false, "vol1", "rediss://user@h:7000/1"},
		{"redis://[::1]:6380/0", "[::1]:6380", 0, "", false, "shoal", "redis://[::1]:6380/0"},
		{"redis+sentinel://s1:26379,s2/mymaster/3?sentinel_password=x", "s1:26379,s2:26379", 3, "mymaster", false, "shoal", "redis+sentinel://s1:26379,s2:26379/mymaster/3"},
		{"redis+sentinel://:pw@s1/mymaster", "s1:26379", 0, "mymaster", false, "shoal", "redis+sentinel://s1:26379/mymaster"},
		{"redis://h1:7000,h2:7001/?cluster=true", "h1:7000,h2:7001", 0, "", true, "shoal", "redis://h1:7000,h2:7001/"},
		{"redis+cluster://h1:7000,h2:7001?ns=x", "h1:7000,h2:7001", 0, "", true, "x", "redis+cluster://h1:7000,h2:7001"},
	}
	for _, c := range cases {
		got, err := parseURL(c.url)
		if err != nil {
			t.Errorf("%s: %v", c.url, err)
			continue
		}
		if a := strings.Join(got.opts.Addrs, ","); a != c.addrs || got.opts.DB != c.db || got.opts.MasterName != c.master ||
			got.cluster != c.cluster || got.ns != c.ns || got.display != c.display {
			t.Errorf("%s: addrs %s db %d master %q cluster %v ns %q display %q", c.url, a, got.opts.DB, got.opts.MasterName, got.cluster, got.ns, got.display)
		}
		if strings.Contains(got.display, "pw") {
			t.Errorf("%s: display %q shows the password", c.url, got.display)
		}
	}
}

func TestParseURLDetails(t *testing.T) {
	c, err := parseURL("rediss+sentinel://u:p%40ss@s1/m/0?sentinel_password=sp&retry_timeout=5s")
	if err != nil {
		t.Fatal(err)
	}
	if c.opts.Username != "u" || c.opts.Password != "p@ss" || c.opts.SentinelPassword != "sp" || c.retry != 5*time.Second || c.opts.TLSConfig == nil {
		t.Errorf("parsed %+v", c)
	}
}

func TestParseURLErrors(t *testing.T) {
	cases := map[string]string{
		"127.0.0.1:6379":                  "malformed META-URL",
		"memcache://h":                    "unknown META-URL scheme",
		"redis+shard://h":                 "unknown META-URL scheme",
		"redis://h:notaport/0":            "bad port",
		"redis://h:6379/x":                "not a number",
		"redis://h:6379/0/1":              "want /DB",
		"redis://h1,h2/0":                 "cluster=true",
		"redis+sentinel://s1:26379":       "master name",
		"redis+cluster://h1,h2/3":         "only database 0",
		"redis://h/0?ns=":                 "ns=",
		"redis://h/0?ns={x}":              "braces",
		"redis://h/0?retry_timeout=never": "retry_timeout",
		"redis://h/0?colour=blue":         `unknown META-URL parameter "colour"`,
		"redis://h/0?cluster=maybe":       "cluster=",
		"redis://,h/0":                    "empty host",
	}
	for url, want := range cases {
		_, err := parseURL(url)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("parseURL(%q) = %v, want error mentioning %q", url, err, want)
		}
	}
}
