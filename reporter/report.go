package reporter

import "github.com/dta-go/dta/wire/dta"

// The helpers below build a report and choose its wire format: the
// prototype's compat opcode when the report fits it, the extended opcode
// otherwise. The returned report aliases key.Bytes and value; nothing is
// copied or checked until the report is encoded (Reporter.Send reports an
// error wrapping dta.ErrEncode for a report that would not decode).

// KeyWrite returns a Key-Write report writing value under key with
// redundancy n (copies, 1..dta.MaxRedundancy) into store (0 = the default
// Key-Write store). It is a compat report (opcode 1) when key.Compat, value
// is 4 bytes and store is 0, else an extended one (0x11).
func KeyWrite(key dta.Key, value []byte, n int, store uint16) dta.Report {
	op := dta.OpKeyWriteExt
	if key.Compat && len(key.Bytes) == 4 && len(value) == 4 && store == 0 {
		op = dta.OpKeyWrite
	}
	return dta.Report{Opcode: op, Store: store, Redundancy: small(n), Key: key.Bytes, Value: value}
}

// KeyIncrement returns a Key-Increment report adding delta to key's
// counters with redundancy n (1..dta.MaxRedundancy) in store (0 = the
// default Key-Increment store). It is a compat report (opcode 3) when
// key.Compat and store is 0, else an extended one (0x13).
func KeyIncrement(key dta.Key, delta uint64, n int, store uint16) dta.Report {
	op := dta.OpKeyIncrementExt
	if key.Compat && len(key.Bytes) == 4 && store == 0 {
		op = dta.OpKeyIncrement
	}
	return dta.Report{Opcode: op, Store: store, Redundancy: small(n), Key: key.Bytes, Delta: delta}
}

// Append returns an Append report adding the entry value to list in store
// (0 = the default Append store). It is a compat report (opcode 2) when
// value is 4 bytes and store is 0, else an extended one (0x12).
func Append(list uint32, value []byte, store uint16) dta.Report {
	op := dta.OpAppendExt
	if len(value) == 4 && store == 0 {
		op = dta.OpAppend
	}
	return dta.Report{Opcode: op, Store: store, List: list, Value: value}
}

// Postcard returns the Postcarding report of hop (1..dta.MaxHops) of the
// flow key, carrying the hop's value, for a path of pathLen hops (0 =
// unknown, else hop..dta.MaxHops) in store (0 = the default Postcarding
// store). It is a compat report (opcode 4) when key.Compat, value is 4
// bytes, pathLen is 0 and store is 0, else an extended one (0x14), the only
// format that carries the path length.
func Postcard(key dta.Key, hop, pathLen int, value []byte, store uint16) dta.Report {
	op := dta.OpPostcardExt
	if key.Compat && len(key.Bytes) == 4 && len(value) == 4 && pathLen == 0 && store == 0 {
		op = dta.OpPostcard
	}
	return dta.Report{Opcode: op, Store: store, Key: key.Bytes, Value: value, Hop: small(hop), PathLen: small(pathLen)}
}

// small converts a count to a byte field. Values that do not fit become
// 255, which encoding rejects for every field that uses small.
func small(n int) uint8 {
	if n < 0 || n > 255 {
		return 255
	}
	return uint8(n)
}
