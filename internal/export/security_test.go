package export

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/dta-go/dta/wire/dta"
)

// selfSigned writes a CA-less self-signed certificate for 127.0.0.1 and
// returns the server's TLS config and the certificate's PEM file.
func selfSigned(t *testing.T) (*tls.Config, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kafka.test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"kafka.test"},
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, IsCA: true, BasicConstraintsValid: true,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	pemFile := filepath.Join(t.TempDir(), "ca.pem")
	os.WriteFile(pemFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}, pemFile
}

func passwordFile(t *testing.T, pass string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "password")
	if err := os.WriteFile(p, []byte(pass+"\n"), mode); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestExportGoesOverTLSWithSCRAM(t *testing.T) {
	srvTLS, caFile := selfSigned(t)
	f := newFixture(t, 2, 256, kfake.TLS(srvTLS), kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-512", "dta", "s3cret"),
		kfake.SeedTopics(1, topicAppend))
	e, _ := f.start(t, Config{Topics: Topics{Append: topicAppend},
		TLS:  TLSConfig{Enabled: true, CAFile: caFile},
		SASL: SASLConfig{Mechanism: "SCRAM-SHA-512", Username: "dta", PasswordFile: passwordFile(t, "s3cret", 0o600)}})
	for i := range 10 {
		f.report(t, dta.Report{Opcode: dta.OpAppend, List: uint32(i % 2), Value: binary.BigEndian.AppendUint32(nil, uint32(i))})
	}
	f.flush()
	cl, err := kgo.NewClient(kgo.SeedBrokers(f.cluster.ListenAddrs()...), kgo.ConsumeTopics(topicAppend),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DialTLSConfig(&tls.Config{InsecureSkipVerify: true}),
		kgo.SASL(scram.Auth{User: "dta", Pass: "s3cret"}.AsSha512Mechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	got := 0
	deadline := time.Now().Add(20 * time.Second)
	for got < 10 && time.Now().Before(deadline) {
		ctx, cancel := contextWithTimeout(time.Second)
		got += len(cl.PollFetches(ctx).Records())
		cancel()
	}
	if got != 10 {
		t.Errorf("consumed %d records over TLS and SCRAM, want 10 (exporter stats: %d acked, %d errors)", got,
			e.Stats().Records[StreamAppend].Load(), e.Stats().Errors[StreamAppend].Load())
	}
}

func TestAWrongPasswordSendsNothingAndIngestGoesOn(t *testing.T) {
	f := newFixture(t, 2, 256, kfake.EnableSASL(), kfake.Superuser("PLAIN", "dta", "right"), kfake.SeedTopics(1, topicAppend))
	e, _ := f.start(t, Config{Topics: Topics{Append: topicAppend}, ShutdownTimeout: 100 * time.Millisecond, SASL: SASLConfig{Mechanism: "PLAIN", Username: "dta",
		PasswordFile: passwordFile(t, "wrong", 0o600)}})
	for i := range 10 {
		f.report(t, dta.Report{Opcode: dta.OpAppend, List: 0, Value: binary.BigEndian.AppendUint32(nil, uint32(i))})
	}
	f.flush()
	if h, _ := f.cat.ByName("append").Append.Head(0); h != 10 {
		t.Fatalf("head %d, want 10: ingest must not depend on Kafka", h)
	}
	time.Sleep(500 * time.Millisecond)
	if n := e.Stats().Records[StreamAppend].Load(); n != 0 {
		t.Errorf("%d records acknowledged with a wrong password", n)
	}
	if lag := e.Stats().AppendLag.Load(); lag != 10 {
		t.Errorf("append lag %d, want 10", lag)
	}
}

func TestConfigRefusesWhatCannotWork(t *testing.T) {
	open := passwordFile(t, "pw", 0o644)
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"no brokers", Config{Topics: Topics{Append: "a"}}, "brokers: none"},
		{"a broker without a port", Config{Brokers: []string{"kafka"}, Topics: Topics{Append: "a"}}, "want host:port"},
		{"a broker with port 0", Config{Brokers: []string{"kafka:0"}, Topics: Topics{Append: "a"}}, "not in 1..65535"},
		{"a broker with a port above 65535", Config{Brokers: []string{"kafka:99999"}, Topics: Topics{Append: "a"}}, "not in 1..65535"},
		{"a broker with a port that is no number", Config{Brokers: []string{"kafka:abc"}, Topics: Topics{Append: "a"}}, "not in 1..65535"},
		{"a broker without a host", Config{Brokers: []string{":9092"}, Topics: Topics{Append: "a"}}, "want host:port"},
		{"every stream off", Config{Brokers: []string{"k:9092"}}, "every stream is off"},
		{"a topic Kafka refuses", Config{Brokers: []string{"k:9092"}, Topics: Topics{Append: "a b"}}, "not a valid Kafka topic"},
		{"an unknown format", Config{Brokers: []string{"k:9092"}, Topics: Topics{Append: "a"}, Format: "avro"}, "format"},
		{"an unknown compression", Config{Brokers: []string{"k:9092"}, Topics: Topics{Append: "a"}, Compression: "brotli"}, "compression"},
		{"a certificate without its key", Config{Brokers: []string{"k:9092"}, Topics: Topics{Append: "a"}, TLS: TLSConfig{Enabled: true, CertFile: "c"}}, "go together"},
		{"an unknown SASL mechanism", Config{Brokers: []string{"k:9092"}, Topics: Topics{Append: "a"}, SASL: SASLConfig{Mechanism: "GSSAPI"}}, "sasl.mechanism"},
		{"SASL without a password", Config{Brokers: []string{"k:9092"}, Topics: Topics{Append: "a"}, SASL: SASLConfig{Mechanism: "PLAIN", Username: "u"}}, "password_file"},
		{"a password file others may read", Config{Brokers: []string{"k:9092"}, Topics: Topics{Append: "a"}, SASL: SASLConfig{Mechanism: "PLAIN", Username: "u", PasswordFile: open}}, "chmod 600"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.cfg, nil, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}
