package kvtest

import "encoding/binary"

// pgStatements counts the statements in a PostgreSQL client's stream
// (protocol 3, without TLS): each Execute ('E') of the extended protocol
// and each simple Query ('Q'). The stream starts with untyped messages, a
// length and a code: the startup message (protocol 3.0), after any TLS or
// GSS request the server refused.
type pgStatements struct {
	started bool   // the startup message was read
	head    []byte // the partial header of the message being read
	skip    int    // bytes of the current message's body still to pass
	count   func() // called per statement
}

// pgProtocol3 is the startup message's code: protocol version 3.0.
const pgProtocol3 = 3 << 16

// feed reads the next bytes of the stream.
func (s *pgStatements) feed(b []byte) {
	for len(b) > 0 {
		if s.skip > 0 {
			n := min(s.skip, len(b))
			s.skip -= n
			b = b[n:]
			continue
		}
		want := 5 // type byte and length
		if !s.started {
			want = 8 // length and code
		}
		n := min(want-len(s.head), len(b))
		s.head = append(s.head, b[:n]...)
		b = b[n:]
		if len(s.head) < want {
			return
		}
		if !s.started {
			s.skip = int(binary.BigEndian.Uint32(s.head)) - 8
			s.started = binary.BigEndian.Uint32(s.head[4:]) == pgProtocol3
		} else {
			s.skip = int(binary.BigEndian.Uint32(s.head[1:])) - 4
			if t := s.head[0]; t == 'E' || t == 'Q' {
				s.count()
			}
		}
		s.head = s.head[:0]
	}
}
