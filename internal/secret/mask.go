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

// userinfoPassword matches the password of a URL's user info in free text:
// scheme://user:PASSWORD@ (the user may be empty, as in redis://:pw@host).
var userinfoPassword = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://[^/@\s:]*:)([^@\s/]*)@`)

// queryPassword matches password=VALUE in a URL query or a key=value DSN.
var queryPassword = regexp.MustCompile(`(?i)(\bpassword=)([^&\s]*)`)

var (
	mu     sync.Mutex
	values []string // registered secrets, longest first
)

// Register adds secret values Mask hides wherever they appear, for the
// rest of the process. Empty values and very short ones (under 4 bytes,
// which would mask ordinary words) are ignored; URL-shaped places are
// masked whatever their length.
func Register(secrets ...string) {
	mu.Lock()
	defer mu.Unlock()
	for _, s := range secrets {
		if len(s) < 4 || contains(values, s) {
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

// Split returns raw without the password of its user info, and that
// password ("" if none, or if raw is not a URL).
func Split(raw string) (stripped, password string) {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw, ""
	}
	pw, ok := u.User.Password()
	if !ok {
		return raw, ""
	}
	u.User = url.User(u.User.Username())
	return u.String(), pw
}

// StripUserinfo returns raw without any user info (user name and
// password), and whether it had some.
func StripUserinfo(raw string) (string, bool) {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw, false
	}
	u.User = nil
	return u.String(), true
}

// WithPassword returns raw with password in its user info, unless raw has
// a password already, password is empty, or raw has no host part (such as
// sqlite:///path): then raw unchanged.
func WithPassword(raw, password string) string {
	if password == "" {
		return raw
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return raw
	}
	if u.User != nil {
		if _, ok := u.User.Password(); ok {
			return raw
		}
		u.User = url.UserPassword(u.User.Username(), password)
	} else {
		u.User = url.UserPassword("", password)
	}
	return u.String()
}
