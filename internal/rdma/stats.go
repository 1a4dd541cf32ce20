package rdma

import (
	"sync/atomic"

	"github.com/dta-go/dta/rdma/requester"
)

// ResponderStats counts what a responder received, executed and answered.
// Counters are live atomics; read them with Load at any time.
type ResponderStats struct {
	Packets atomic.Uint64 // packets received (each packet of a coalesced datagram counts)
	Bytes   atomic.Uint64 // their UDP payload bytes
	Batches atomic.Uint64 // receive calls that returned datagrams: Packets/Batches is the mean batch
	// Pauses counts the reads made after a pause instead of a wait to be
	// woken (ResponderConfig.Pause), those that found nothing included.
	Pauses    atomic.Uint64
	Coalesced atomic.Uint64 // datagrams holding several packets (UDP GRO of a requester's GSO run)
	Truncated atomic.Uint64 // datagrams (or coalesced packets) longer than the largest packet, dropped
	BadICRC   atomic.Uint64 // ICRC mismatch, silently dropped
	// ForeignIPID counts packets whose ICRC matched only with an IPv4 ID
	// and DF bit other than dta's own senders' ID 0 with DF: an RDMA NIC's
	// or rxe's. Over a socket they are recovered from the trailer
	// (roce.ICRCCache.VerifyAnyID); over AF_XDP, read from the header.
	ForeignIPID atomic.Uint64
	Malformed   atomic.Uint64 // not decodable (truncated, unknown opcode, bad pad, bad TVer), of another partition (P_Key), or of another transport than its QP's: silently dropped
	UnknownQP   atomic.Uint64 // DestQP not connected, or connected to another address: silently dropped
	// NotAllowed counts packets from a source outside AllowTranslators,
	// dropped (REQs among them are also answered: CMRejectNotAllowed).
	NotAllowed atomic.Uint64

	Duplicates    atomic.Uint64 // requests with a PSN behind the expected one: re-ACKed (READs re-executed), never re-executed
	OutOfSequence atomic.Uint64 // requests with a PSN ahead of the expected one (a gap): dropped

	Writes             atomic.Uint64 // RDMA WRITE messages executed (all packets placed)
	WriteBytes         atomic.Uint64 // bytes placed by WRITEs
	Atomics            atomic.Uint64 // FETCH_ADD / COMPARE_SWAP executed
	AtomicReplays      atomic.Uint64 // duplicate atomics answered from the saved original value
	AtomicReplayMisses atomic.Uint64 // duplicate atomics no longer in the history: dropped
	Immediates         atomic.Uint64 // immediates delivered to OnImmediate
	Reads              atomic.Uint64 // RDMA READ requests executed (first time)
	ReadBytes          atomic.Uint64 // bytes those READs returned
	ReadReplays        atomic.Uint64 // duplicate READ requests executed again, responses resent
	ReadResponses      atomic.Uint64 // READ Response packets sent, replays included

	ACKs       atomic.Uint64 // ACKs sent (coalesced)
	AtomicACKs atomic.Uint64 // ATOMIC ACKs sent, replays included

	NAKSequence          atomic.Uint64 // NAK PSN sequence error sent (one per gap)
	NAKInvalidRequest    atomic.Uint64 // NAK invalid request sent
	NAKRemoteAccess      atomic.Uint64 // NAK remote access error sent
	NAKRemoteOperational atomic.Uint64 // NAK remote operational error sent

	// Why requests were refused (each also counted in one NAK counter).
	RejectRKey       atomic.Uint64 // unknown R_Key
	RejectRights     atomic.Uint64 // the MR lacks the access right (write, atomic or read)
	RejectBounds     atomic.Uint64 // VA..VA+len not inside the MR
	RejectMisaligned atomic.Uint64 // atomic VA not 8-byte aligned
	RejectLength     atomic.Uint64 // payload, pad or DMA length against PMTU and message; DMA length above 2^31
	RejectOpcode     atomic.Uint64 // opcode not supported, or out of message sequence

	CMRequests          atomic.Uint64 // REQs received
	CMDuplicateRequests atomic.Uint64 // retransmitted REQs, answered with the saved REP
	CMReplies           atomic.Uint64 // REPs sent (first time)
	CMReadyToUse        atomic.Uint64 // connections established (RTU or first packet)
	CMDisconnects       atomic.Uint64 // DREQs received
	CMRejectService     atomic.Uint64 // REJ invalid service ID sent
	CMRejectResources   atomic.Uint64 // REJ no resources (QP table full) sent
	CMRejectInvalid     atomic.Uint64 // REJ for another bad REQ field (MTU, transport) sent
	CMRejectNotAllowed  atomic.Uint64 // REJ consumer defined sent: the REQ's source is outside AllowTranslators
	CMDropped           atomic.Uint64 // MADs ignored: not CM, bad Q_Key, unknown connection

	QPs                      atomic.Int64  // QPs now in the table (half-open included)
	QPsReclaimed             atomic.Uint64 // idle QPs dropped for a new REQ, or replaced by a REQ from the same address
	QPsTimedOut              atomic.Uint64 // half-open QPs and unanswered advertisements given up
	QPsRevoked               atomic.Uint64 // QPs torn down (DREQ sent) because their peer left AllowTranslators
	AdvertisementRetransmits atomic.Uint64 // advertisement packets resent

	SendErrors atomic.Uint64 // datagrams the kernel refused to send
	ReadErrors atomic.Uint64 // failed receive calls
}

// RequesterStats counts what a requester sent and what came back
// (requester.Stats).
type RequesterStats = requester.Stats
