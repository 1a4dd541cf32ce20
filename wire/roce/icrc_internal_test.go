package roce

import (
	"hash/crc32"
	"testing"
)

func TestICRCSeedIsTheRegisterAfterEightOnes(t *testing.T) {
	if got := ^crc32.ChecksumIEEE([]byte{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}); got != icrcSeed {
		t.Errorf("register after 8 x 0xFF = %#x, icrcSeed = %#x", got, uint32(icrcSeed))
	}
}
