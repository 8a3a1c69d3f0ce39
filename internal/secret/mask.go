package secret

import (
	"net/url"
	"regexp"
	"sort"
	"strings"
	"sync"
)

// Masked replaces a secret in what Shoal prints.
const Masked = "xxxxx"

// MinFreeText is the shortest registered secret masked in free text.
const MinFreeText = 8

// userinfoPassword matches the password of a URL's user info in free text:
// scheme://user:PASSWORD@ (the user may be empty, as in redis://:pw@host).
var userinfoPassword = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://[^/@\s:]*:)([^@\s/]*)@`)

// queryPassword matches password=VALUE in a URL query or a key=value DSN.
var queryPassword = regexp.MustCompile(`(?i)(password=)([^&\s]*)`)

var (
	mu     sync.Mutex
	values []string // registered secrets, longest first
)

// Register adds secret values Mask hides wherever they appear, for the
// rest of the process. Values under MinFreeText bytes are ignored: a short
// password is often an ordinary word ("shoal"), and masking it in free
// text would mangle messages and paths; URL-shaped places (user:PW@,
// password=PW) are masked whatever the length.
func Register(secrets ...string) {
	mu.Lock()
	defer mu.Unlock()
	for _, s := range secrets {
		if len(s) < MinFreeText || contains(values, s) {
			continue
		}
		values = append(values, s)
		if esc := url.QueryEscape(s); esc != s {
			values = append(values, esc)
		}
	}
	sort.Slice(values, func(i, j int) bool { return len(values[i]) > len(values[j]) })
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// Mask returns s with every secret it can recognise replaced by Masked:
// URL passwords, password= parameters and registered values.
func Mask(s string) string {
	s = userinfoPassword.ReplaceAllString(s, "${1}"+Masked+"@")
	s = queryPassword.ReplaceAllString(s, "${1}"+Masked)
	mu.Lock()
	defer mu.Unlock()
	for _, v := range values {
		s = strings.ReplaceAll(s, v, Masked)
	}
	return s
}

// Has reports whether the URL raw carries a password in its user info.
func Has(raw string) bool {
	_, pw := Split(raw)
	return pw != ""
}

// authority splits raw into scheme://, user info (without '@'; ok false
// if none) and the rest (hosts, path, query). Hosts may be a list
// (redis+sentinel://h1:26379,h2:26379/...), which net/url refuses.
func authority(raw string) (head, userinfo, rest string, hasUser, ok bool) {
	i := strings.Index(raw, "://")
	if i <= 0 {
		return "", "", "", false, false
	}
	head, tail := raw[:i+3], raw[i+3:]
	end := strings.IndexAny(tail, "/?#")
	if end < 0 {
		end = len(tail)
	}
	at := strings.LastIndexByte(tail[:end], '@')
	if at < 0 {
		return head, "", tail, false, true
	}
	return head, tail[:at], tail[at+1:], true, true
}

// Split returns raw without the password of its user info, and that
// password, unescaped ("" if none, or if raw is not a URL).
func Split(raw string) (stripped, password string) {
	head, ui, rest, hasUser, ok := authority(raw)
	if !ok || !hasUser {
		return raw, ""
	}
	user, pw, found := strings.Cut(ui, ":")
	if !found {
		return raw, ""
	}
	if p, err := url.PathUnescape(pw); err == nil {
		pw = p
	}
	if user == "" {
		return head + rest, pw
	}
	return head + user + "@" + rest, pw
}

// StripUserinfo returns raw without any user info (user name and
// password), and whether it had some.
func StripUserinfo(raw string) (string, bool) {
	head, _, rest, hasUser, ok := authority(raw)
	if !ok || !hasUser {
		return raw, false
	}
	return head + rest, true
}

// WithPassword returns raw with password in its user info, unless raw has
// a password already, password is empty, or raw has no host (such as
// sqlite:///path): then raw unchanged.
func WithPassword(raw, password string) string {
	head, ui, rest, hasUser, ok := authority(raw)
	if password == "" || !ok || rest == "" || rest[0] == '/' || strings.Contains(ui, ":") {
		return raw
	}
	user := ""
	if hasUser {
		if u, err := url.PathUnescape(ui); err == nil {
			user = u
		}
	}
	return head + url.UserPassword(user, password).String() + "@" + rest
}
