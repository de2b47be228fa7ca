package vector

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestNormalize(t *testing.T) {
	tests := []struct {
		name string
		in   []float32
		want []float32
		ok   bool
	}{
		{"3-4-5", []float32{3, 4}, []float32{0.6, 0.8}, true},
		{"axis", []float32{0, -7, 0}, []float32{0, -1, 0}, true},
		{"already unit", []float32{1, 0, 0, 0}, []float32{1, 0, 0, 0}, true},
		{"zero", []float32{0, 0, 0}, []float32{0, 0, 0}, false},
		{"empty", []float32{}, []float32{}, false},
		{"nil", nil, nil, false},
		{"nan", []float32{float32(math.NaN()), 1}, nil, false},
		{"inf", []float32{float32(math.Inf(1)), 1}, []float32{float32(math.Inf(1)), 1}, false},
		{"huge", []float32{3e38, 4e38 / 2}, []float32{float32(3e38 / math.Sqrt(9e76+4e76)), float32(2e38 / math.Sqrt(9e76+4e76))}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := append([]float32(nil), tt.in...)
			if tt.in != nil && len(tt.in) == 0 {
				v = []float32{}
			}
			if got := Normalize(v); got != tt.ok {
				t.Fatalf("Normalize = %v, want %v", got, tt.ok)
			}
			if tt.name == "nan" {
				if !math.IsNaN(float64(v[0])) || v[1] != 1 {
					t.Fatalf("NaN vector changed: %v", v)
				}
				return
			}
			if diff := cmp.Diff(tt.want, v); diff != "" {
				t.Errorf("vector (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDot(t *testing.T) {
	seq := func(n int, f func(i int) float32) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = f(i)
		}
		return v
	}
	one := func(int) float32 { return 1 }
	idx := func(i int) float32 { return float32(i) }
	tests := []struct {
		name string
		a, b []float32
		want float32
	}{
		{"empty", nil, nil, 0},
		{"one", []float32{2}, []float32{-3}, -6},
		{"seven", seq(7, idx), seq(7, one), 21},
		{"eight", seq(8, idx), seq(8, idx), 140},
		{"nine", seq(9, idx), seq(9, idx), 204},
		{"seventeen", seq(17, idx), seq(17, one), 136},
		{"384", seq(384, one), seq(384, func(i int) float32 { return float32(i%3) - 1 }), 0},
		{"a shorter", seq(3, idx), seq(10, one), 3},
		{"b shorter", seq(10, one), seq(4, idx), 6},
		{"one empty", seq(10, one), nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Dot(tt.a, tt.b); got != tt.want {
				t.Errorf("Dot = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestDotMatchesNaive(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for n := range 70 {
		a, b := randVec(r, n), randVec(r, n)
		var want float64
		for i := range a {
			want += float64(a[i]) * float64(b[i])
		}
		if got := Dot(a, b); math.Abs(float64(got)-want) > 1e-5 {
			t.Errorf("n=%d: Dot = %v, want %v", n, got, want)
		}
	}
}

func TestEncode(t *testing.T) {
	v := []float32{1, -2, 0.5, 0}
	want := []byte{
		0x00, 0x00, 0x80, 0x3f,
		0x00, 0x00, 0x00, 0xc0,
		0x00, 0x00, 0x00, 0x3f,
		0x00, 0x00, 0x00, 0x00,
	}
	if diff := cmp.Diff(want, Encode(v)); diff != "" {
		t.Errorf("Encode (-want +got):\n%s", diff)
	}
	got := AppendEncode([]byte("id"), v[:1])
	if diff := cmp.Diff([]byte{'i', 'd', 0x00, 0x00, 0x80, 0x3f}, got); diff != "" {
		t.Errorf("AppendEncode (-want +got):\n%s", diff)
	}
	if got := Encode(nil); len(got) != 0 {
		t.Errorf("Encode(nil) = %v, want empty", got)
	}
}

func TestDecode(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		want []float32
		err  bool
	}{
		{"empty", nil, []float32{}, false},
		{"values", []byte{0, 0, 0x80, 0x3f, 0, 0, 0, 0xc0}, []float32{1, -2}, false},
		{"negative zero", []byte{0, 0, 0, 0x80}, []float32{float32(math.Copysign(0, -1))}, false},
		{"short", []byte{0, 0, 0x80}, nil, true},
		{"trailing", []byte{0, 0, 0x80, 0x3f, 1}, nil, true},
		{"nan", []byte{0, 0, 0xc0, 0x7f}, nil, true},
		{"inf", []byte{0, 0, 0x80, 0x7f}, nil, true},
		{"minus inf", []byte{0, 0, 0x80, 0x3f, 0, 0, 0x80, 0xff}, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Decode(tt.in)
			if tt.err {
				if !errors.Is(err, ErrBadBlob) {
					t.Fatalf("Decode error = %v, want ErrBadBlob", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Decode (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	v := randVec(r, 384)
	got, err := Decode(Encode(v))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(v, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 0, 0x80, 0x3f})
	f.Add([]byte{0, 0, 0xc0, 0x7f})
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := Decode(b)
		if err != nil {
			if !errors.Is(err, ErrBadBlob) {
				t.Fatalf("error %v is not ErrBadBlob", err)
			}
			return
		}
		if len(v) != len(b)/4 {
			t.Fatalf("len = %d for %d bytes", len(v), len(b))
		}
		if got := Encode(v); !bytes.Equal(got, b) {
			t.Fatalf("re-encoding %x gives %x", b, got)
		}
	})
}

func randVec(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

func randUnit(r *rand.Rand, n int) []float32 {
	v := randVec(r, n)
	Normalize(v)
	return v
}

func BenchmarkDot384(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 6))
	x, y := randUnit(r, 384), randUnit(r, 384)
	b.ReportAllocs()
	var s float32
	for b.Loop() {
		s += Dot(x, y)
	}
	_ = s
}

func BenchmarkEncode384(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 6))
	v := randUnit(r, 384)
	buf := make([]byte, 0, 4*384)
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendEncode(buf[:0], v)
	}
}

func BenchmarkDecode384(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 6))
	blob := Encode(randUnit(r, 384))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(blob); err != nil {
			b.Fatal(err)
		}
	}
}
