package intreport

import "errors"

// Sentinel errors; every decoding error wraps exactly one of them.
var (
	ErrTruncated     = errors.New("intreport: truncated")
	ErrVersion       = errors.New("intreport: unsupported telemetry report version")
	ErrReportLength  = errors.New("intreport: individual report length beyond the packet")
	ErrMDLength      = errors.New("intreport: metadata length disagrees with the metadata bits")
	ErrRepType       = errors.New("intreport: reserved report type")
	ErrInType        = errors.New("intreport: reserved inner type")
	ErrInner         = errors.New("intreport: malformed inner packet")
	ErrINTHeader     = errors.New("intreport: malformed INT shim or INT-MD header")
	ErrINTStack      = errors.New("intreport: INT metadata stack not a whole number of hops")
	ErrTLV           = errors.New("intreport: malformed TLV")
	ErrTooManyHops   = errors.New("intreport: more INT hops than MaxHops")
	ErrUnsupported   = errors.New("intreport: unsupported encapsulation")
	errNoMoreReports = errors.New("intreport: no more reports")
)

// Reasons, in the order of Reason's values: a decoding error's reason for
// per-reason counters, without string matching.
var reasonErrs = [...]error{ErrTruncated, ErrVersion, ErrReportLength, ErrMDLength, ErrRepType, ErrInType,
	ErrInner, ErrINTHeader, ErrINTStack, ErrTLV, ErrTooManyHops, ErrUnsupported}

// Reason identifies a sentinel error, for counters indexed by reason.
type Reason uint8

// NumReasons is the number of reasons (Reason values are 0..NumReasons-1;
// ReasonOf returns NumReasons for an error that wraps none of them).
const NumReasons = Reason(len(reasonErrs))

var reasonNames = [...]string{"truncated", "version", "report_length", "md_length", "rep_type", "in_type",
	"inner", "int_header", "int_stack", "tlv", "too_many_hops", "unsupported"}

// String returns the reason's metric label, e.g. "md_length".
func (r Reason) String() string {
	if r < NumReasons {
		return reasonNames[r]
	}
	return "other"
}

// ReasonOf returns the reason err wraps, or NumReasons.
func ReasonOf(err error) Reason {
	for i, e := range reasonErrs {
		if errors.Is(err, e) {
			return Reason(i)
		}
	}
	return NumReasons
}
