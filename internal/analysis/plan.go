package analysis

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/dta-go/dta/hashing"
	"github.com/dta-go/dta/internal/primitive/keyincrement"
	"github.com/dta-go/dta/internal/primitive/keywrite"
	"github.com/dta-go/dta/internal/primitive/postcard"
	"github.com/dta-go/dta/wire/dta"
)

// Defaults the planner applies to zero fields of a Design and a PlanRequest.
const (
	DefaultValueSize    = 4       // Key-Write value bytes, as the embedded default store
	DefaultChecksumBits = 32      // b: the primitives' 32-bit checksums and slots
	DefaultHops         = 5       // Postcarding B: a fat tree's longest path, as in the paper
	DefaultValues       = 1 << 20 // Postcarding |V|: the embedded default store's [0, 2^20−1]
	DefaultTarget       = 0.99    // wanted success rate
)

// DefaultN is the redundancies compared when a Design lists none.
var DefaultN = []int{1, 2, 3, 4}

// ErrInvalid is wrapped by every error of Plan and Capacity: they fail only on
// requests that make no sense.
var ErrInvalid = errors.New("invalid request")

// FieldError is what is wrong with one field of a request or configuration,
// which it names as the field's documentation does ("value size"; a few
// fields together: "hops, values"), so that a caller can name its own
// input for it (a command-line flag).
type FieldError struct {
	Field string
	Err   error
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Err.Error() }
func (e *FieldError) Unwrap() error { return e.Err }

// Design is what Plan and Capacity share: the primitive and the parameters of
// its store. Fields that do not apply to the primitive must be zero.
type Design struct {
	Primitive dta.Primitive // KeyWrite, Postcard or KeyIncrement (Append has no error to plan for)
	N         []int         // candidate redundancies, each 1..dta.MaxRedundancy; nil means DefaultN

	// ValueSize is the Key-Write value size in bytes, 1..dta.MaxValueLen;
	// 0 means DefaultValueSize. It sets the slot size.
	ValueSize int
	// ChecksumBits is b, the checksum width of Key-Write or the slot width of
	// Postcarding, 1..MaxChecksumBits; 0 means DefaultChecksumBits. It changes
	// the error rates only: the memory is always that of the primitives' real
	// 32-bit checksums and slots. The bounds assume checksum and slot hashes
	// independent, as with hashing.CRC32C; with hashing.CRC32 a 4-byte key
	// never collides, while a longer key has only b − log2(slots) independent
	// checksum bits (see hashing), so lower ChecksumBits accordingly.
	ChecksumBits int
	// Hops is the Postcarding chunk length B, 1..hashing.MaxHops; 0 means
	// DefaultHops.
	Hops int
	// Values is the Postcarding value set size |V|, 1..2^32−1 and below 2^b;
	// 0 means DefaultValues.
	Values uint64
	// Hash is the store's slot hash; 0 means hashing.CRC32C, which takes any
	// slot count. hashing.CRC32 needs a power of two, so its plans round the
	// slot count up (Plan) or down (Capacity) to one.
	Hash hashing.Algorithm
}

// Rates are the error rates of one store geometry at one age.
type Rates struct {
	// Age is the number of keys written after the queried one. For
	// Key-Increment it is the number of other keys sharing the counters
	// since the last reset (before or after the queried key alike).
	Age uint64 `json:"age"`
	// Alpha is the load factor, Age divided by the slots (Key-Write),
	// chunks (Postcarding) or counters (Key-Increment).
	Alpha float64 `json:"alpha"`
	// NoAnswer bounds the probability of no answer (KeyWriteNoAnswer,
	// PostcardNoOutput); 0 for Key-Increment, which always answers.
	NoAnswer float64 `json:"no_answer"`
	// Wrong bounds the probability of a wrong answer (KeyWriteWrong,
	// PostcardWrong); for Key-Increment it is the exact probability of an
	// overestimate (KeyIncrementOverestimated).
	Wrong float64 `json:"wrong"`
	// Success is a lower bound on the probability of the right answer,
	// 1 − NoAnswer − Wrong (the paper's two bounds together cover every other
	// outcome); for Key-Increment the exact probability that the estimate is
	// the true count (KeyIncrementExact).
	Success float64 `json:"success"`
	// MeanError bounds a Key-Increment estimate's expected overestimate as a
	// fraction of the total count (KeyIncrementMeanError); 0 otherwise.
	MeanError float64 `json:"mean_error,omitempty"`
}

// PlanRequest asks how much memory a store needs to meet a success rate.
type PlanRequest struct {
	Design
	// Keys is the number of distinct keys (flows) per epoch or in total, at
	// least 1. For Key-Increment they all share the counters until a reset.
	Keys uint64
	// Age is the number of keys written after the queried one at which Target
	// must hold; 0 means Keys. It must be 0 for Key-Increment, whose
	// counters see every key of the epoch (the age is Keys − 1).
	Age uint64
	// Target is the wanted success rate (Rates.Success) at Age, in (0, 1); 0
	// means DefaultTarget.
	Target float64
}

// PlanRow is the smallest store of one redundancy meeting the target.
type PlanRow struct {
	N      int    `json:"n"`
	Slots  uint64 `json:"slots"`        // slots, chunks or counters; 0 if none suffice
	Memory uint64 `json:"memory_bytes"` // the Spec's RegionSize; 0 if no store suffices
	Rates
	MeetsTarget bool   `json:"meets_target"`
	Note        string `json:"note,omitempty"` // why no store of this N meets the target
}

// PlanResult is the answer to a PlanRequest: one row per candidate N.
type PlanResult struct {
	Rows []PlanRow `json:"rows"`
	// BestN is the N whose store meets the target with the least memory (the
	// smaller N on a tie: fewer writes per report), 0 if none does.
	BestN int `json:"best_n"`
}

// Plan returns, for each candidate N, the least memory (in the primitive's
// real slot or chunk sizes) whose success rate at req.Age reaches req.Target,
// with the error rates of that store, and the best N. For Key-Write and
// Postcarding it solves for the largest load factor meeting the target by
// bisection on the bounds (their failure probability grows with α), for
// Key-Increment for the smallest counter count.
func Plan(req PlanRequest) (PlanResult, error) {
	d, err := req.Design.resolve()
	if err != nil {
		return PlanResult{}, err
	}
	switch {
	case req.Keys < 1:
		return PlanResult{}, invalid("keys", "must be at least 1")
	case d.Primitive == dta.KeyIncrement && req.Age != 0:
		return PlanResult{}, invalid("age", "does not apply to keyincrement, whose counters see every key of the epoch; give keys")
	case req.Target == 0:
		req.Target = DefaultTarget
	case !(req.Target > 0 && req.Target < 1):
		return PlanResult{}, invalid("target", "%v out of range (0, 1)", req.Target)
	}
	age := req.Age
	if age == 0 {
		age = req.Keys
	}
	if d.Primitive == dta.KeyIncrement {
		age = req.Keys - 1
	}
	maxFail := 1 - req.Target
	var res PlanResult
	var best uint64
	for _, n := range d.N {
		row := d.plan(n, age, maxFail)
		res.Rows = append(res.Rows, row)
		if row.MeetsTarget && (res.BestN == 0 || row.Memory < best || row.Memory == best && n < res.BestN) {
			res.BestN, best = n, row.Memory
		}
	}
	return res, nil
}

// plan finds the smallest store of redundancy n failing at most maxFail at age.
func (d *Design) plan(n int, age uint64, maxFail float64) PlanRow {
	meets := func(slots uint64) bool { return d.rates(n, slots, age).fail() <= maxFail }
	var slots uint64
	if d.Primitive == dta.KeyIncrement {
		// P(exact) depends on the counter count itself, not only on the
		// load factor: bisect on the count.
		if !meets(maxSlots) {
			return d.infeasible(n, age, "even 2^32 counters leave the target unmet")
		}
		lo, hi := uint64(1), uint64(maxSlots) // meets(hi), !meets(lo) or lo too small
		for hi-lo > 1 {
			mid := lo + (hi-lo)/2
			if meets(mid) {
				hi = mid
			} else {
				lo = mid
			}
		}
		slots = hi
	} else {
		fail := func(alpha float64) float64 { return d.ratesAt(n, alpha).fail() }
		alpha := maxAlpha(fail, maxFail)
		if alpha == 0 {
			return d.infeasible(n, age, "no load factor meets the target")
		}
		need := math.Ceil(float64(age) / alpha)
		if need > maxSlots {
			return d.infeasible(n, age, fmt.Sprintf("needs %.3g %s, beyond the 2^32 a 32-bit hash reaches", need, d.unit()))
		}
		slots = uint64(need)
		// Rounding can leave the store a hair short of the target.
		for range 16 {
			if meets(slots) || slots >= maxSlots {
				break
			}
			slots++
		}
	}
	slots = max(slots, 2)
	if d.Hash == hashing.CRC32 {
		slots = ceilPow2(slots)
	}
	if slots > maxSlots {
		return d.infeasible(n, age, fmt.Sprintf("needs more than 2^32 %s", d.unit()))
	}
	mem, err := d.memory(n, slots)
	if err != nil {
		return d.infeasible(n, age, err.Error())
	}
	r := d.rates(n, slots, age)
	if r.fail() > maxFail {
		return d.infeasible(n, age, fmt.Sprintf("%d %s still miss the target", slots, d.unit()))
	}
	return PlanRow{N: n, Slots: slots, Memory: mem, Rates: r, MeetsTarget: true}
}

func (d *Design) infeasible(n int, age uint64, why string) PlanRow {
	return PlanRow{N: n, Rates: Rates{Age: age}, Note: why}
}

// CapacityRequest asks what a given memory achieves.
type CapacityRequest struct {
	Design
	// Memory is the store's size in bytes; the store has as many slots
	// (chunks, counters) as the Spec's SlotsFor (ChunksFor) fits in it.
	Memory uint64
	// Keys is the default age (Key-Write, Postcarding) or the number of keys
	// sharing the counters (Key-Increment).
	Keys uint64
	// Ages are the numbers of keys written after the queried one to evaluate;
	// nil means [Keys]. Not for Key-Increment.
	Ages []uint64
}

// CapacityRow is the store of one redundancy that fits the memory.
type CapacityRow struct {
	N      int     `json:"n"`
	Slots  uint64  `json:"slots"`        // slots, chunks or counters
	Memory uint64  `json:"memory_bytes"` // the bytes those use, at most the memory given
	Ages   []Rates `json:"ages"`         // one per requested age
}

// CapacityResult is the answer to a CapacityRequest: one row per candidate N.
type CapacityResult struct {
	Rows []CapacityRow `json:"rows"`
}

// Capacity returns, for each candidate N, the error rates at each age of the
// largest store of the primitive that fits req.Memory.
func Capacity(req CapacityRequest) (CapacityResult, error) {
	d, err := req.Design.resolve()
	if err != nil {
		return CapacityResult{}, err
	}
	ages := req.Ages
	switch {
	case req.Memory == 0:
		return CapacityResult{}, invalid("memory", "0 bytes is not a memory to rate")
	case d.Primitive == dta.KeyIncrement && len(ages) > 0:
		return CapacityResult{}, invalid("age", "does not apply to keyincrement, whose counters see every key of the epoch; give keys")
	case d.Primitive == dta.KeyIncrement && req.Keys < 1:
		return CapacityResult{}, invalid("keys", "keyincrement needs the keys per epoch, at least 1")
	case d.Primitive == dta.KeyIncrement:
		ages = []uint64{req.Keys - 1}
	case len(ages) == 0 && req.Keys < 1:
		return CapacityResult{}, invalid("age", "give the ages to evaluate or keys")
	case len(ages) == 0:
		ages = []uint64{req.Keys}
	}
	var res CapacityResult
	for _, n := range d.N {
		slots := d.slotsFor(n, req.Memory)
		if slots < 2 {
			return CapacityResult{}, invalid("memory", "%d bytes hold fewer than 2 %s", req.Memory, d.unit())
		}
		mem, err := d.memory(n, slots)
		if err != nil {
			return CapacityResult{}, invalid("memory", "%v", err)
		}
		row := CapacityRow{N: n, Slots: slots, Memory: mem}
		for _, age := range ages {
			row.Ages = append(row.Ages, d.rates(n, slots, age))
		}
		res.Rows = append(res.Rows, row)
	}
	return res, nil
}

const maxSlots = keywrite.MaxSlots // the same 2^32 for every primitive

// resolve validates d and fills in its defaults.
func (d Design) resolve() (Design, error) {
	switch d.Primitive {
	case dta.KeyWrite, dta.Postcard, dta.KeyIncrement:
	case dta.Append:
		return d, invalid("primitive", "append has no error to plan for (a list keeps its last capacity − batch entries exactly)")
	default:
		return d, invalid("primitive", "%v is not keywrite, postcard or keyincrement", d.Primitive)
	}
	if len(d.N) == 0 {
		d.N = DefaultN
	}
	for i, n := range d.N {
		if n < 1 || n > dta.MaxRedundancy {
			return d, invalid("n", "%d out of range [1, %d]", n, dta.MaxRedundancy)
		}
		if slices.Contains(d.N[:i], n) {
			return d, invalid("n", "%d listed twice", n)
		}
	}
	switch d.Hash {
	case 0:
		d.Hash = hashing.CRC32C
	case hashing.CRC32, hashing.CRC32C:
	default:
		return d, invalid("hash", "%v is not a known hash", d.Hash)
	}
	if d.Primitive != dta.KeyWrite && d.ValueSize != 0 {
		return d, invalid("value size", "applies to keywrite only (postcard hop values fill 4-byte slots, keyincrement counters are 8 bytes)")
	}
	if d.Primitive != dta.Postcard && (d.Hops != 0 || d.Values != 0) {
		return d, invalid("hops, values", "apply to postcard only")
	}
	if d.Primitive == dta.KeyIncrement {
		if d.ChecksumBits != 0 {
			return d, invalid("checksum bits", "keyincrement counters carry no checksum")
		}
		return d, nil
	}
	if d.ChecksumBits == 0 {
		d.ChecksumBits = DefaultChecksumBits
	}
	if !validBits(d.ChecksumBits) {
		return d, invalid("checksum bits", "%d out of range [1, %d]", d.ChecksumBits, MaxChecksumBits)
	}
	if d.Primitive == dta.KeyWrite {
		if d.ValueSize == 0 {
			d.ValueSize = DefaultValueSize
		}
		if d.ValueSize < 1 || d.ValueSize > dta.MaxValueLen {
			return d, invalid("value size", "%d out of range [1, %d]", d.ValueSize, dta.MaxValueLen)
		}
		return d, nil
	}
	if d.Hops == 0 {
		d.Hops = DefaultHops
	}
	if d.Values == 0 {
		d.Values = DefaultValues
	}
	switch {
	case d.Hops < 1 || d.Hops > hashing.MaxHops:
		return d, invalid("hops", "%d out of range [1, %d]", d.Hops, hashing.MaxHops)
	case d.Values > uint64(postcard.Blank):
		return d, invalid("values", "%d above the %d a 32-bit slot can encode beside the blank", d.Values, uint64(postcard.Blank))
	case float64(d.Values)+1 > math.Ldexp(1, d.ChecksumBits):
		return d, invalid("values", "%d values and the blank do not fit in %d-bit slots", d.Values, d.ChecksumBits)
	}
	return d, nil
}

// unit names what the primitive's store counts.
func (d *Design) unit() string {
	switch d.Primitive {
	case dta.Postcard:
		return "chunks"
	case dta.KeyIncrement:
		return "counters"
	}
	return "slots"
}

// memory returns the region size of the store of n copies and slots slots,
// or why that store cannot exist.
func (d *Design) memory(n int, slots uint64) (uint64, error) {
	switch d.Primitive {
	case dta.KeyWrite:
		s := keywrite.Spec{Slots: slots, ValueSize: d.ValueSize, MaxRedundancy: n, Hash: d.Hash}
		return s.RegionSize(), s.Validate()
	case dta.Postcard:
		s := d.postcardSpec(n, slots)
		return s.RegionSize(), s.Validate()
	default:
		s := keyincrement.Spec{Slots: slots, Redundancy: n, Hash: d.Hash}
		return s.RegionSize(), s.Validate()
	}
}

// slotsFor returns the slots (chunks, counters) of the largest store that fits
// memory bytes.
func (d *Design) slotsFor(n int, memory uint64) uint64 {
	switch d.Primitive {
	case dta.KeyWrite:
		return keywrite.Spec{ValueSize: d.ValueSize, MaxRedundancy: n, Hash: d.Hash}.SlotsFor(memory)
	case dta.Postcard:
		return d.postcardSpec(n, 0).ChunksFor(memory)
	default:
		return keyincrement.Spec{Redundancy: n, Hash: d.Hash}.SlotsFor(memory)
	}
}

func (d *Design) postcardSpec(n int, chunks uint64) postcard.Spec {
	return postcard.Spec{Chunks: chunks, Hops: d.Hops, Redundancy: n, MinValue: 0, MaxValue: uint32(d.Values - 1), Hash: d.Hash}
}

// rates returns the error rates of the store of n copies and slots slots at
// age.
func (d *Design) rates(n int, slots, age uint64) Rates {
	if d.Primitive == dta.KeyIncrement {
		exact, over := keyIncrementExact(age, slots, n)
		return Rates{
			Age:       age,
			Alpha:     float64(age) / float64(slots),
			Wrong:     over,
			Success:   exact,
			MeanError: KeyIncrementMeanError(n, slots),
		}
	}
	r := d.ratesAt(n, float64(age)/float64(slots))
	r.Age = age
	return r
}

// ratesAt returns the Key-Write or Postcarding rates at load factor alpha.
func (d *Design) ratesAt(n int, alpha float64) Rates {
	r := Rates{Alpha: alpha}
	if d.Primitive == dta.Postcard {
		v := float64(d.Values)
		r.NoAnswer = PostcardNoOutput(alpha, n, d.ChecksumBits, d.Hops, v)
		r.Wrong = PostcardWrong(alpha, n, d.ChecksumBits, d.Hops, v)
	} else {
		r.NoAnswer = KeyWriteNoAnswer(alpha, n, d.ChecksumBits)
		r.Wrong = KeyWriteWrong(alpha, n, d.ChecksumBits)
	}
	r.Success = max(0, 1-r.NoAnswer-r.Wrong)
	return r
}

// fail is the probability that the answer is not the right one (for
// Key-Increment NoAnswer is 0), summed without the cancellation of
// 1 − Success.
func (r Rates) fail() float64 { return r.NoAnswer + r.Wrong }

// maxAlpha returns the largest load factor (to float64 precision, found by
// bisection) at which fail stays at most maxFail; fail must be non-decreasing
// and 0 at α = 0.
func maxAlpha(fail func(float64) float64, maxFail float64) float64 {
	lo, hi := 0.0, 1.0
	for fail(hi) <= maxFail {
		lo, hi = hi, 2*hi
		if hi > 1<<30 {
			return lo
		}
	}
	for {
		mid := lo + (hi-lo)/2
		if mid <= lo || mid >= hi {
			return lo
		}
		if fail(mid) <= maxFail {
			lo = mid
		} else {
			hi = mid
		}
	}
}

func ceilPow2(n uint64) uint64 {
	p := uint64(1)
	for p < n {
		p <<= 1
	}
	return p
}

// invalid returns an ErrInvalid naming field in a FieldError.
func invalid(field, format string, a ...any) error {
	return fmt.Errorf("%w: %w", ErrInvalid, &FieldError{Field: field, Err: fmt.Errorf(format, a...)})
}
