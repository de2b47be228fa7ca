package vector_test

import (
	"fmt"

	"agentd/internal/vector"
)

func Example() {
	x := vector.NewIndex(3)
	for id, v := range map[int64][]float32{
		1: {1, 0, 0},
		2: {1, 1, 0},
		3: {0, 0, 1},
	} {
		vector.Normalize(v)
		if err := x.Add(id, v); err != nil {
			fmt.Println(err)
		}
	}
	q := []float32{2, 1, 0}
	vector.Normalize(q)
	for _, h := range x.Search(q, 2, nil) {
		fmt.Printf("%d %.3f\n", h.ID, h.Score)
	}
	// Output:
	// 2 0.949
	// 1 0.894
}

func ExampleEncode() {
	blob := vector.Encode([]float32{1, -2})
	fmt.Printf("% x\n", blob)
	v, err := vector.Decode(blob)
	fmt.Println(v, err)
	_, err = vector.Decode(blob[:7])
	fmt.Println(err)
	// Output:
	// 00 00 80 3f 00 00 00 c0
	// [1 -2] <nil>
	// vector: bad blob: length 7 is not a multiple of 4
}

func ExampleTopK() {
	ids := []int64{7, 8, 9}
	vecs := [][]float32{{0, 1}, {1, 0}, {0.6, 0.8}}
	fmt.Println(vector.TopK([]float32{0, 1}, ids, vecs, 2))
	// Output:
	// [{7 1} {9 0.8}]
}
