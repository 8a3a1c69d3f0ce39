package secret

import "regexp"

// internalPrefix matches the package names internal errors start with
// ("sqlkv: ", "kvmeta: ", "metrics: "), where a message or a wrapped one
// begins: they say where in the code an error arose, which means nothing
// to the person who reads it. Command names ("gc: ", "fsck: "), concepts
// ("backup: ") and prose ("a volume: ") stay.
var internalPrefix = regexp.MustCompile(`(^|: |\()(?:sqlkv|rediskv|memkv|kvmeta|kvopen|kv|filestore|s3store|memstore|objopen|keyring|identity|vfs|fusefs|volume|data|metrics|journal|takeover|opstat): `)

// Message is what a person is shown of err, by the CLI and the web
// console alike: secrets masked (Mask), internal package names gone.
func Message(err error) string {
	msg := Mask(err.Error())
	for {
		next := internalPrefix.ReplaceAllString(msg, "${1}")
		if next == msg {
			return msg
		}
		msg = next
	}
}
