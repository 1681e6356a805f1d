package assign

import (
	"errors"
	"math/rand/v2"
	"testing"
)

// TestHooks checks that every solver returns Stop's error once Stop fires,
// reports non-decreasing progress ending at 1 otherwise, and gives the same
// result as without hooks.
func TestHooks(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	errStop := errors.New("stop")
	sym := func(n int) []float64 {
		c := kinds[0].gen(rng, n, n)
		for i := 0; i < n; i++ {
			for j := 0; j < i; j++ {
				c[i*n+j] = c[j*n+i]
			}
		}
		return c
	}
	cases := []struct {
		name string
		run  func(h *Hooks) (float64, error)
	}{
		{"Rectangular", func() func(h *Hooks) (float64, error) {
			c := kinds[0].gen(rng, 300, 400)
			return func(h *Hooks) (float64, error) {
				s, err := RectangularWith(c, 300, 400, h)
				if err != nil {
					return 0, err
				}
				return s.Cost, nil
			}
		}()},
		{"Rectangular/square", func() func(h *Hooks) (float64, error) {
			c := kinds[1].gen(rng, 300, 300)
			return func(h *Hooks) (float64, error) {
				s, err := RectangularWith(c, 300, 300, h)
				if err != nil {
					return 0, err
				}
				return s.Cost, nil
			}
		}()},
		{"Imbalanced", func() func(h *Hooks) (float64, error) {
			c := kinds[0].gen(rng, 700, 150)
			return func(h *Hooks) (float64, error) {
				s, err := ImbalancedWith(c, 700, 150, h)
				if err != nil {
					return 0, err
				}
				return s.Cost, nil
			}
		}()},
		{"MinWeightPerfectMatching", func() func(h *Hooks) (float64, error) {
			c := sym(300)
			return func(h *Hooks) (float64, error) {
				m, err := MinWeightPerfectMatchingWith(c, 300, h)
				if err != nil {
					return 0, err
				}
				return m.Cost, nil
			}
		}()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want, err := tc.run(nil)
			if err != nil {
				t.Fatal(err)
			}
			var fr []float64
			got, err := tc.run(&Hooks{Stop: func() error { return nil }, Progress: func(f float64) { fr = append(fr, f) }})
			if err != nil || got != want {
				t.Fatalf("with hooks: (%v, %v), without: %v", got, err, want)
			}
			for i := 1; i < len(fr); i++ {
				if fr[i] < fr[i-1] {
					t.Fatalf("progress went back from %v to %v", fr[i-1], fr[i])
				}
			}
			if len(fr) == 0 || fr[len(fr)-1] != 1 {
				t.Errorf("progress %v does not end at 1", fr)
			}
			for _, after := range []int{0, 1, 5} {
				polls := 0
				_, err := tc.run(&Hooks{Stop: func() error {
					if polls++; polls > after {
						return errStop
					}
					return nil
				}})
				if !errors.Is(err, errStop) {
					t.Errorf("stop after %d polls: err = %v, want the Stop error", after, err)
				}
			}
		})
	}
}
