package requester

import "sync/atomic"

// Stats counts what a requester sent and what came back. Counters are live
// atomics; read them with Load at any time.
type Stats struct {
	Writes       atomic.Uint64 // WRITE ops sent (first transmission)
	WriteImms    atomic.Uint64 // WRITE with immediate ops sent
	FetchAdds    atomic.Uint64 // FETCH_ADD ops sent
	CompareSwaps atomic.Uint64 // COMPARE_SWAP ops sent
	Reads        atomic.Uint64 // READ ops sent (first transmission)
	Refused      atomic.Uint64 // ops refused by Post: unknown target, out of range, misaligned

	Packets     atomic.Uint64 // RDMA packets sent (first transmission)
	Bytes       atomic.Uint64 // their UDP payload bytes
	Retransmits atomic.Uint64 // packets resent (go-back-N)
	Timeouts    atomic.Uint64 // ACK timeouts that triggered a resend
	WindowFull  atomic.Uint64 // times Post waited for the window or the atomic limit
	RateWaits   atomic.Uint64 // times Post waited for the rate limiter

	ACKs       atomic.Uint64 // ACKs received
	AtomicACKs atomic.Uint64 // ATOMIC ACKs received
	LastAtomic atomic.Uint64 // original value carried by the latest ATOMIC ACK
	// AtomicsLost counts atomics acknowledged beyond while their own
	// ATOMIC ACK was missing: each was resent to fetch its saved result
	// (an implied NAK), so the count measures lost or reordered ATOMIC
	// ACKs, not lost results.
	AtomicsLost atomic.Uint64

	ReadResponses  atomic.Uint64 // READ Response packets accepted (bytes placed in a Dst)
	ReadBytes      atomic.Uint64 // bytes of completed READs
	ReadDuplicates atomic.Uint64 // READ Response packets already received (replays of a resent READ), ignored
	// ReadsLost counts READs resent because one of their responses, or an
	// earlier READ's or atomic's, was missing (an implied NAK).
	ReadsLost atomic.Uint64

	NAKSequence          atomic.Uint64 // NAK PSN sequence error received
	NAKInvalidRequest    atomic.Uint64 // NAK invalid request received
	NAKRemoteAccess      atomic.Uint64 // NAK remote access error received
	NAKRemoteOperational atomic.Uint64 // NAK remote operational error received
	RNRNAKs              atomic.Uint64 // RNR NAKs received
	OpsFailed            atomic.Uint64 // ops refused by the responder (class C NAK): dropped
	OpsLost              atomic.Uint64 // packets unacknowledged when the connection went down

	BadICRC atomic.Uint64 // received packets with a wrong ICRC
	// ForeignIPID counts received packets whose ICRC matched with an IPv4
	// ID and DF bit recovered from it: an RDMA NIC's responses (dta's own
	// responder sends ID 0 with DF).
	ForeignIPID atomic.Uint64
	Stray       atomic.Uint64 // received packets from another address, for another QP or undecodable
	Connects    atomic.Uint64 // connections established, the first included
	Reconnect   atomic.Uint64 // connections lost (timeouts, DREQ, REJ)
	KeepAlives  atomic.Uint64 // zero-length WRITEs sent on an idle connection (Config.KeepAlive)

	InFlight atomic.Int64  // packets in the window now
	SendPSN  atomic.Uint32 // next PSN to send
	AckedPSN atomic.Uint32 // PSN of the oldest unacknowledged packet (= SendPSN when idle)

	SendErrors atomic.Uint64 // datagrams the kernel refused to send
	ReadErrors atomic.Uint64 // failed receive calls
}
