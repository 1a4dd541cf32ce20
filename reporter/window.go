package reporter

// window keeps the retransmittable datagrams that are not yet acknowledged,
// oldest first, in a ring of WindowSize slots. Their sequence numbers are
// consecutive: slot i (counting from the oldest) holds seq head+i.
type window struct {
	slots   [WindowSize]slot
	first   int   // ring index of the oldest datagram
	count   int   // datagrams held
	head    uint8 // seq of the oldest datagram, or of the next one when empty
	evicted [256 / 64]uint64
}

type slot struct {
	n   int
	buf [MTU]byte
}

// next is the sequence number the next datagram gets.
func (w *window) next() uint8 { return w.head + uint8(w.count) }

// push stores datagram b, whose seq is w.next(). When the window is full the
// oldest datagram is forgotten first; push reports whether that happened.
// It returns the stored copy.
func (w *window) push(b []byte) (stored []byte, evicted bool) {
	if w.count == WindowSize {
		w.setEvicted(w.head, true)
		w.first = (w.first + 1) % WindowSize
		w.head++
		w.count--
		evicted = true
	}
	w.setEvicted(w.next(), false)
	s := &w.slots[(w.first+w.count)%WindowSize]
	s.n = copy(s.buf[:], b)
	w.count++
	return s.buf[:s.n], evicted
}

// at returns the i-th oldest datagram held.
func (w *window) at(i int) []byte {
	s := &w.slots[(w.first+i)%WindowSize]
	return s.buf[:s.n]
}

// ackThrough frees every datagram up to and including seq, the last one the
// translator accepted in order. ok is false when seq is outside the window
// (neither one of the datagrams held nor the one just before the oldest):
// a stale or foreign ACK, which frees nothing.
func (w *window) ackThrough(seq uint8) (freed int, ok bool) {
	d := int(uint8(seq - w.head + 1))
	if d > w.count {
		return 0, false
	}
	w.first = (w.first + d) % WindowSize
	w.head += uint8(d)
	w.count -= d
	return d, true
}

// renumber gives the datagrams held the sequence numbers head, head+1, …,
// rewriting the seq byte of each.
func (w *window) renumber(head uint8) {
	w.head = head
	for i := range w.count {
		b := w.at(i)
		b[1] = head + uint8(i)
		w.setEvicted(b[1], false)
	}
}

// wasEvicted reports whether seq was forgotten unacknowledged (and not
// reused since).
func (w *window) wasEvicted(seq uint8) bool { return w.evicted[seq/64]&(1<<(seq%64)) != 0 }

func (w *window) setEvicted(seq uint8, v bool) {
	if v {
		w.evicted[seq/64] |= 1 << (seq % 64)
	} else {
		w.evicted[seq/64] &^= 1 << (seq % 64)
	}
}
