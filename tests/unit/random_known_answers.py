# Independent implementation of splitmix64 and xoshiro256** from
# https://prng.di.unimi.it/ (Blackman & Vigna), for known-answer values.
M = (1 << 64) - 1
def splitmix64(state):
    while True:
        state = (state + 0x9E3779B97F4A7C15) & M
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M
        yield z ^ (z >> 31)
def rotl(x, k): return ((x << k) | (x >> (64 - k))) & M
def xoshiro(seed):
    g = splitmix64(seed)
    s = [next(g) for _ in range(4)]
    while True:
        r = (rotl((s[1] * 5) & M, 7) * 9) & M
        t = (s[1] << 17) & M
        s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3]; s[2] ^= t; s[3] = rotl(s[3], 45)
        yield r
g = splitmix64(1234567); print("splitmix64(1234567):", [next(g) for _ in range(5)])
for seed in (0, 1, 42):
    g = xoshiro(seed); print("xoshiro seed", seed, [hex(next(g)) for _ in range(6)])
# Lemire uniform for a few draws, seed 42, range [1, 6]
def uniform(g, lo, hi):
    n = (hi - lo + 1) & M
    x = next(g)
    if n == 0: return x
    m = x * n; l = m & M
    if l < n:
        t = ((1 << 64) - n) % n
        while l < t:
            x = next(g); m = x * n; l = m & M
    return lo + (m >> 64)
g = xoshiro(42); print("uniform(1,6) seed 42:", [uniform(g, 1, 6) for _ in range(12)])
g = xoshiro(42); print("uniform(0,2^63) seed 42:", [uniform(g, 0, 1<<63) for _ in range(3)])
# how many next() calls uniform(0, 2^63) took for its 3 answers
class Count:
    def __init__(s, g): s.g=g; s.n=0
    def __iter__(s): return s
    def __next__(s): s.n+=1; return next(s.g)
c = Count(xoshiro(42)); [uniform(c, 0, 1<<63) for _ in range(3)]; print("draws", c.n)
g = xoshiro(42); print("after 3 uniform(0,2^63), next:", hex(next(g)))
c = Count(xoshiro(42)); vals=[uniform(c, 0, 1<<63) for _ in range(3)]; print("next after:", hex(next(c)), c.n)
g = xoshiro(7); print("hex(20) seed 7:", ''.join('%016x'%next(g) for _ in range(3))[:40])
# chance(0.25) over 10000 draws, seed 3
g = xoshiro(3); t = int(0.25 * 2**53); print("chance(0.25)x10000 seed 3:", sum((next(g)>>11) < t for _ in range(10000)))
