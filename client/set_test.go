package client_test

import (
	"context"
	"encoding/binary"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/dta-go/dta/client"
	"github.com/dta-go/dta/partition"
)

// setEnv is three collectors' query servers, each holding the keys the
// partition function gives it (and, with replicas 2, the next one's too).
// The stores have 1024 Key-Write slots: 300 keys spread over three stay
// readable; 300 keys twice would overwrite the oldest.
func setEnv(t *testing.T, replicas int) ([]*env, []string, *partition.Map) {
	return setEnvN(t, replicas, 300)
}

func setEnvN(t *testing.T, replicas int, n uint32) ([]*env, []string, *partition.Map) {
	t.Helper()
	envs := []*env{newEnv(t), newEnv(t), newEnv(t)}
	names := []string{"c1", "c2", "c3"}
	pm, _ := partition.New(names)
	for k := uint32(1); k <= n; k++ {
		for _, o := range pm.Owners(nil, binary.BigEndian.AppendUint32(nil, k), replicas) {
			envs[o].keyWrite(k, k+1000, 2, false)
		}
	}
	return envs, names, pm
}

func servers(envs []*env, names []string) []string {
	var s []string
	for i, e := range envs {
		s = append(s, names[i]+"="+e.ts.URL)
	}
	return s
}

func TestASetReadsEachKeyFromItsOwner(t *testing.T) {
	envs, names, pm := setEnv(t, 1)
	ctx := context.Background()
	set, err := client.NewSet(ctx, servers(envs, names), 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	keys := make([]string, 0, 300)
	for k := 1; k <= 300; k++ {
		keys = append(keys, strconv.Itoa(k))
	}
	res, err := set.KeyWriteBatch(ctx, "keywrite", keys, client.KeyWriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Each answer is the owner's own answer (a few of the oldest keys may be
	// overwritten in the owners' 1024 slots: empty there too).
	found := 0
	for i, r := range res {
		o, _ := client.New(envs[pm.Owner(keyBytes(keys[i]))].ts.URL, nil)
		want, _ := o.KeyWrite(ctx, "keywrite", keys[i], client.KeyWriteOptions{})
		if r.Key != keys[i] || r.Status != want.Status || (r.Status == client.StatusFound && *r.ValueU32 != uint32(i+1001)) {
			t.Fatalf("key %s: %+v, its owner answers %+v (batch answers out of order or from the wrong collector)", keys[i], r, want)
		}
		if r.Status == client.StatusFound {
			found++
		}
	}
	if found < 285 {
		t.Errorf("only %d of 300 keys found through the set", found)
	}
	// Reading every key from one collector alone misses about two thirds.
	one, _ := client.New(envs[0].ts.URL, nil)
	alone, _ := one.KeyWriteBatch(ctx, "keywrite", keys, client.KeyWriteOptions{})
	alone1 := 0
	for _, r := range alone {
		if r.Status == client.StatusFound {
			alone1++
		}
	}
	if alone1 > 150 {
		t.Errorf("one collector holds %d of 300 keys: the keys are not spread", alone1)
	}
}

func TestASetFallsBackOnAReplicaWhenTheOwnerIsDown(t *testing.T) {
	envs, names, pm := setEnvN(t, 2, 150)
	ctx := context.Background()
	set, err := client.NewSet(ctx, servers(envs, names), 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The keys c1 owns whose replica still holds them (a few of the oldest
	// may have been overwritten in its 1024 slots by later keys).
	var owned []string
	for k := uint32(1); k <= 150; k++ {
		ow := pm.Owners(nil, binary.BigEndian.AppendUint32(nil, k), 2)
		if ow[0] != 0 {
			continue
		}
		owned = append(owned, strconv.Itoa(int(k)))
	}
	held := map[string]bool{}
	for _, k := range owned {
		c, _ := client.New(envs[pm.Owners(nil, keyBytes(k), 2)[1]].ts.URL, nil)
		if r, _ := c.KeyWrite(ctx, "keywrite", k, client.KeyWriteOptions{}); r.Status == client.StatusFound {
			held[k] = true
		}
	}
	if len(held) < len(owned)*3/4 || len(owned) < 20 {
		t.Fatalf("only %d of c1's %d keys are on their replica", len(held), len(owned))
	}
	envs[0].ts.Close() // c1 is gone
	for k := range held {
		r, err := set.KeyWrite(ctx, "keywrite", k, client.KeyWriteOptions{})
		if err != nil || r.Status != client.StatusFound {
			t.Fatalf("key %s (owner %s, down): %+v %v", k, names[0], r, err)
		}
	}
	res, err := set.KeyWriteBatch(ctx, "keywrite", owned, client.KeyWriteOptions{})
	if err != nil {
		t.Fatalf("a batch of keys whose owner is down: %v", err)
	}
	for i, r := range res {
		if held[owned[i]] && r.Status != client.StatusFound {
			t.Errorf("batch: key %s %s", owned[i], r.Status)
		}
	}
	// Without replicas a key owned by the dead collector cannot be read.
	set1, _ := client.NewSet(ctx, servers(envs, names), 1, nil)
	if _, err := set1.KeyWrite(ctx, "keywrite", owned[0], client.KeyWriteOptions{}); err == nil {
		t.Errorf("key %s read although its only holder is down", owned[0])
	}
}

// A batch some of whose keys live only on a collector that is down answers
// the others and names the unanswered ones: the results of keys whose
// owner is up are their owners' answers, and the error lists exactly the
// dead collector's keys.
func TestASetAnswersTheKeysOfTheCollectorsThatAreUp(t *testing.T) {
	envs, names, pm := setEnvN(t, 1, 60)
	ctx := context.Background()
	set, err := client.NewSet(ctx, servers(envs, names), 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	envs[1].ts.Close() // c2 is gone
	keys := make([]string, 0, 60)
	var dead []int
	for k := 1; k <= 60; k++ {
		keys = append(keys, strconv.Itoa(k))
		if pm.Owner(keyBytes(keys[k-1])) == 1 {
			dead = append(dead, k-1)
		}
	}
	if len(dead) == 0 || len(dead) == len(keys) {
		t.Fatalf("c2 owns %d of 60 keys", len(dead))
	}
	res, err := set.KeyWriteBatch(ctx, "keywrite", keys, client.KeyWriteOptions{})
	var ue *client.UnansweredError
	if !errors.As(err, &ue) {
		t.Fatalf("err = %v, want an *UnansweredError", err)
	}
	if !slices.Equal(ue.Keys, dead) || ue.Total != 60 || !strings.Contains(err.Error(), "c2") {
		t.Errorf("unanswered %v of %d (%v), want c2's keys %v of 60", ue.Keys, ue.Total, err, dead)
	}
	if len(res) != len(keys) {
		t.Fatalf("%d results for %d keys", len(res), len(keys))
	}
	for i, r := range res {
		if slices.Contains(dead, i) {
			continue
		}
		if r.Key != keys[i] || r.Status != client.StatusFound || *r.ValueU32 != uint32(i+1001) {
			t.Errorf("key %s, owner up: %+v", keys[i], r)
		}
	}
}

func keyBytes(k string) []byte {
	n, _ := strconv.Atoi(k)
	return binary.BigEndian.AppendUint32(nil, uint32(n))
}

func TestASetLearnsUnnamedMembersNamesFromHealthz(t *testing.T) {
	named := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"status":"ok","name":"c7"}`))
	}))
	defer named.Close()
	set, err := client.NewSet(context.Background(), []string{named.URL}, 1, nil)
	if err != nil || strings.Join(set.Names(), ",") != "c7" {
		t.Fatalf("names %v, err %v", set, err)
	}
	if _, err := client.NewSet(context.Background(), []string{named.URL, named.URL}, 1, nil); err == nil {
		t.Error("two members of one name accepted")
	}
}
