"""A record-by-record checker of exactly-once output (issue 22).

A rolling count (WordCount's `sum`, testjobs' `checkpointed` count) writes
an update (key, n) for every record of key: n = 1, 2, ..., final. Its
output is exactly once when every update appears exactly once across the
committed files of the exactly-once file sink, and final is what the input
holds. Comparing only the last value per key misses a count that restarted
from 0 after a restore (`the 1` ... `the 203385`, then `the 1` ... again),
so this reads every committed record.

- read_committed(out_dir, parse): {key: [values in file order]} of the
  committed part files (names that start with a dot are in progress or
  pending); parse turns a line into (key, value) or raises ValueError.
- parse_word_count ("word n", WordCount) and parse_pair ("(k,n)", testjobs'
  checkpointed job) are such parsers.
- check_rolling_counts(updates, expected): a CheckResult saying which key
  lost which n, which n came twice, and the totals.
- tokenize / count_words: WordCount's words of a text, as
  examples/wordcount/wordcount.c splits them (runs of ASCII letters and
  digits, lower-cased), computed here independently of the job.
- write_corpus: deterministic text files whose word frequencies are skewed
  as in natural text (Zipf), for WordCount's input.

`python3 tests/e2e/exactly_once.py` runs the checker's own unit checks."""

import collections
import json
import os
import random
import re
import unittest

# ---- reading the sink's committed output ----------------------------------------------------


def committed_files(out_dir):
    """The committed part files of out_dir, sorted by name (a name that
    starts with a dot is in progress or pending: not committed)."""
    return sorted(os.path.join(out_dir, n) for n in os.listdir(out_dir)
                  if not n.startswith(".") and os.path.isfile(os.path.join(out_dir, n)))


def read_committed(out_dir, parse):
    """{key: [values in file order]} of every committed record of out_dir;
    files in name order. A line parse refuses is an AssertionError naming
    the file and the line."""
    updates = collections.defaultdict(list)
    for path in committed_files(out_dir):
        with open(path, "rb") as f:
            for lineno, line in enumerate(f, 1):
                try:
                    key, value = parse(line)
                except ValueError as e:
                    raise AssertionError(f"{path}:{lineno}: unexpected line {line!r} ({e})")
                updates[key].append(value)
    return dict(updates)


def parse_word_count(line):
    """b"word 17\\n" -> ("word", 17) (WordCount's format: the word, a space,
    its count)."""
    word, sep, n = line.rstrip(b"\n").rpartition(b" ")
    if not sep or not word:
        raise ValueError("not 'word count'")
    return word.decode("ascii"), int(n)


def parse_word_count_csv(line):
    """b"word,17\\n" -> ("word", 17) (WordCount --format csv: the tuple as
    CSV; its words never need quotes)."""
    word, sep, n = line.rstrip(b"\n").rpartition(b",")
    if not sep or not word or b'"' in word:
        raise ValueError("not 'word,count'")
    return word.decode("ascii"), int(n)


def parse_word_count_json(line):
    """b'{"word":"to","count":17}\\n' -> ("to", 17) (WordCount --format
    json: a JSON object per line, exactly these two members)."""
    obj = json.loads(line)
    if not isinstance(obj, dict) or sorted(obj) != ["count", "word"] \
            or not isinstance(obj["count"], int):
        raise ValueError("not {'word': ..., 'count': n}")
    return obj["word"], obj["count"]


_PAIR = re.compile(rb"^\((-?\d+),(-?\d+)\)$")


def parse_pair(line):
    """b"(3,17)\\n" -> (3, 17) (a Tuple2 of integers, as testjobs'
    checkpointed job writes its counts)."""
    m = _PAIR.match(line.rstrip(b"\n"))
    if m is None:
        raise ValueError("not '(key,count)'")
    return int(m.group(1)), int(m.group(2))


# ---- the check ------------------------------------------------------------------------------


class CheckResult:
    """What check_rolling_counts found: per key the n missing and the n
    written more than once; totals."""

    def __init__(self):
        self.expected_updates = 0   # sum of the expected finals
        self.committed_updates = 0  # records read
        self.lost = 0               # expected updates not found
        self.duplicated = 0         # extra copies of updates found
        self.missing_keys = []      # expected keys without a record
        self.unexpected_keys = []   # keys (or n beyond the final) not expected
        self.beyond = 0             # records of n outside 1..final
        self.bad = {}               # key -> (missing [n], duplicated {n: copies}, beyond [n])

    @property
    def ok(self):
        return not self.bad and not self.unexpected_keys and not self.missing_keys

    def message(self, keys=5, values=8):
        """A readable account: totals, then the first keys in trouble, the
        worst first, with their first missing and duplicated n."""
        if self.ok:
            return (f"exactly once: {self.committed_updates} updates of "
                    f"{self.expected_updates} expected")
        lines = [f"not exactly once: {self.expected_updates} updates expected, "
                 f"{self.committed_updates} committed, {self.lost} lost, "
                 f"{self.duplicated} duplicated, {self.beyond} beyond a key's final count; "
                 f"{len(self.bad)} keys wrong, {len(self.missing_keys)} expected keys absent, "
                 f"{len(self.unexpected_keys)} keys not in the input"]
        worst = sorted(self.bad.items(), key=lambda kv: -(len(kv[1][0]) + sum(kv[1][1].values())
                                                          + len(kv[1][2])))
        for key, (missing, dup, beyond) in worst[:keys]:
            parts = [f"key {key!r}:"]
            if missing:
                parts.append(f"{len(missing)} missing (n = {_runs(missing, values)})")
            if dup:
                parts.append(f"{sum(dup.values())} extra copies of {len(dup)} n "
                             f"(n = {_runs(sorted(dup), values)})")
            if beyond:
                parts.append(f"{len(beyond)} beyond its final (n = {_runs(beyond, values)})")
            lines.append("  " + " ".join(parts))
        if len(worst) > keys:
            lines.append(f"  ... and {len(worst) - keys} more keys")
        if self.missing_keys:
            lines.append(f"  absent keys: {self.missing_keys[:keys]!r}")
        if self.unexpected_keys:
            lines.append(f"  keys not in the input: {self.unexpected_keys[:keys]!r}")
        return "\n".join(lines)

    def __str__(self):
        return self.message()


def _runs(ns, limit):
    """[1,2,3,7,9,10] -> "1-3, 7, 9-10" (the first limit runs)."""
    runs = []
    start = prev = None
    for n in ns:
        if prev is not None and n == prev + 1:
            prev = n
            continue
        if start is not None:
            runs.append((start, prev))
        start = prev = n
    if start is not None:
        runs.append((start, prev))
    text = ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in runs[:limit])
    return text + (f", ... ({len(runs) - limit} more runs)" if len(runs) > limit else "")


def check_rolling_counts(updates, expected):
    """updates: {key: [values]} (every committed record, any order);
    expected: {key: final count}. Every n in 1..final must appear exactly
    once per key, and no other key or n. Returns a CheckResult."""
    r = CheckResult()
    r.expected_updates = sum(expected.values())
    r.committed_updates = sum(len(v) for v in updates.values())
    for key, final in expected.items():
        got = updates.get(key)
        if got is None:
            if final > 0:
                r.missing_keys.append(key)
                r.lost += final
                r.bad[key] = (list(range(1, final + 1)), {}, [])
            continue
        # The common case, checked fast: exactly 1..final.
        if len(got) == final and sorted(got) == list(range(1, final + 1)):
            continue
        seen = collections.Counter(got)
        missing = [n for n in range(1, final + 1) if n not in seen]
        dup = {n: c - 1 for n, c in seen.items() if c > 1 and 1 <= n <= final}
        beyond = sorted(n for n in seen if not 1 <= n <= final for _ in range(seen[n]))
        r.lost += len(missing)
        r.duplicated += sum(dup.values())
        r.beyond += len(beyond)
        if missing or dup or beyond:
            r.bad[key] = (missing, dup, beyond)
    for key in updates:
        if key not in expected:
            r.unexpected_keys.append(key)
            r.beyond += len(updates[key])
    return r


def assert_exactly_once(test, updates, expected, what="output"):
    """Fails test (a unittest.TestCase) with check_rolling_counts' account."""
    r = check_rolling_counts(updates, expected)
    if not r.ok:
        test.fail(f"{what}: {r.message()}")
    return r


# ---- WordCount's words ----------------------------------------------------------------------

_WORD = re.compile(rb"[A-Za-z0-9]+")


def tokenize(data):
    """WordCount's words of bytes data: runs of ASCII letters and digits,
    lower-cased (isalnum and tolower in the C locale), as str."""
    return [w.decode("ascii") for w in _WORD.findall(data.lower())]


def count_words(paths):
    """{word: count} over the files at paths (a file, a folder of files, or
    a list of either)."""
    if isinstance(paths, str):
        paths = [paths]
    files = []
    for p in paths:
        if os.path.isdir(p):
            files += sorted(os.path.join(p, n) for n in os.listdir(p))
        else:
            files.append(p)
    counts = collections.Counter()
    for path in files:
        with open(path, "rb") as f:
            counts.update(_WORD.findall(f.read().lower()))
    return {w.decode("ascii"): n for w, n in counts.items()}


# The most frequent English words, in order; the rest of the vocabulary is
# made of syllables (and a few with digits).
_COMMON = ("the of and to a in is it you that he was for on are with as I his they be at one "
           "have this from or had by hot word but what some we can out other were all there "
           "when up use your how said an each she which do their time if will way about many "
           "then them write would like so these her long make thing see him two has look more "
           "day could go come did number sound no most people my over know water than call "
           "first who may down side been now find").split()
_SYLLABLES = ("ka", "lo", "mi", "ne", "ru", "ta", "shi", "vo", "pe", "da", "gri", "zu", "an",
              "ol", "est", "ing", "er", "qu", "th", "ble")


def vocabulary(size, seed=22):
    """size distinct words: the common ones, then made-up ones (some
    capitalized, some with digits)."""
    rng = random.Random(seed)
    words = list(_COMMON[:size])
    seen = {w.lower() for w in words}
    while len(words) < size:
        w = "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(1, 4)))
        r = rng.random()
        if r < 0.05:
            w += str(rng.randint(0, 99))
        elif r < 0.08:
            w = w.capitalize()
        if w.lower() in seen:
            continue
        seen.add(w.lower())
        words.append(w)
    return words


def write_corpus(folder, files, total_bytes, vocab_size=3000, seed=22, skew=1.05):
    """Writes files text files part-00 ... into folder, total_bytes in all
    (about), deterministic for its arguments: words drawn with Zipf
    frequencies (rank r weighs 1/r^skew), sentences with capitals and
    punctuation, lines of 40-100 characters. Returns their paths."""
    os.makedirs(folder, exist_ok=True)
    words = vocabulary(vocab_size, seed)
    cum, acc = [], 0.0
    for r in range(1, len(words) + 1):
        acc += 1.0 / r ** skew
        cum.append(acc)
    punct = [",", ",", ";", ":", "--", "!", "?", ".", "."]
    paths = []
    for i in range(files):
        rng = random.Random(seed * 1000 + i)
        path = os.path.join(folder, f"part-{i:02d}")
        target = total_bytes // files
        size = 0
        lines = []
        sentence_start = True
        batch = rng.choices(words, cum_weights=cum, k=target // 5)
        line = []
        width = 0
        limit = rng.randint(40, 100)
        bi = 0
        while size < target:
            if bi == len(batch):
                batch = rng.choices(words, cum_weights=cum, k=max(1000, (target - size) // 5))
                bi = 0
            w = batch[bi]
            bi += 1
            if sentence_start:
                w = w.capitalize()
                sentence_start = False
            x = rng.random()
            if x < 0.12:
                w += rng.choice(punct)
                sentence_start = w.endswith((".", "!", "?"))
            elif x < 0.125:
                w = w.upper()
            elif x < 0.13:
                w = "'" + w
            line.append(w)
            width += len(w) + 1
            if width >= limit:
                text = " ".join(line) + "\n"
                lines.append(text)
                size += len(text)
                line, width, limit = [], 0, rng.randint(40, 100)
        if line:
            lines.append(" ".join(line) + "\n")
        with open(path, "w", encoding="ascii") as f:
            f.writelines(lines)
        paths.append(path)
    return paths


# ---- the checker's own checks ---------------------------------------------------------------


class CheckerTest(unittest.TestCase):
    EXPECTED = {"the": 5, "of": 3, "ka": 1}

    def test_exactly_once_passes_in_any_order(self):
        r = check_rolling_counts({"the": [3, 4, 5, 1, 2], "of": [1, 2, 3], "ka": [1]},
                                 self.EXPECTED)
        self.assertTrue(r.ok, r.message())
        self.assertEqual((r.expected_updates, r.committed_updates, r.lost, r.duplicated),
                         (9, 9, 0, 0))

    def test_a_lost_update_is_named(self):
        r = check_rolling_counts({"the": [1, 2, 4, 5], "of": [1, 2, 3], "ka": [1]},
                                 self.EXPECTED)
        self.assertFalse(r.ok)
        self.assertEqual((r.lost, r.duplicated), (1, 0))
        self.assertEqual(r.bad, {"the": ([3], {}, [])})
        self.assertIn("key 'the': 1 missing (n = 3)", r.message())

    def test_a_repeated_update_is_named(self):
        r = check_rolling_counts({"the": [1, 2, 3, 4, 5], "of": [1, 2, 2, 3], "ka": [1]},
                                 self.EXPECTED)
        self.assertFalse(r.ok)
        self.assertEqual((r.lost, r.duplicated), (0, 1))
        self.assertIn("key 'of': 1 extra copies of 1 n (n = 2)", r.message())

    def test_a_count_restarted_from_1_loses_and_repeats(self):
        # A restore that lost the sum: 1..3 written, then 1..2 again for
        # the two records after the checkpoint; the final count reads 2.
        r = check_rolling_counts({"the": [1, 2, 3, 1, 2], "of": [1, 2, 3], "ka": [1]},
                                 self.EXPECTED)
        self.assertFalse(r.ok)
        self.assertEqual((r.lost, r.duplicated), (2, 2))
        self.assertEqual(r.bad["the"], ([4, 5], {1: 1, 2: 1}, []))
        self.assertIn("4-5", r.message())
        self.assertIn("not exactly once: 9 updates expected, 9 committed, 2 lost, 2 duplicated",
                      r.message())

    def test_absent_extra_keys_and_counts_past_the_final(self):
        r = check_rolling_counts({"the": [1, 2, 3, 4, 5, 6], "of": [1, 2, 3], "zz": [1]},
                                 self.EXPECTED)
        self.assertFalse(r.ok)
        self.assertEqual(r.missing_keys, ["ka"])
        self.assertEqual(r.unexpected_keys, ["zz"])
        self.assertEqual(r.beyond, 2)
        self.assertEqual(r.lost, 1)

    def test_readers_skip_dot_files_and_name_a_bad_line(self):
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "part-0-0"), "w") as f:
                f.write("the 1\nof 1\nthe 2\n")
            with open(os.path.join(d, "part-1-0"), "w") as f:
                f.write("the 3\n")
            with open(os.path.join(d, ".part-0-1.pending"), "w") as f:
                f.write("the 4\n")
            self.assertEqual(read_committed(d, parse_word_count), {"the": [1, 2, 3], "of": [1]})
            with open(os.path.join(d, "part-2-0"), "w") as f:
                f.write("(1,2)\n")
            with self.assertRaisesRegex(AssertionError, r"part-2-0:1: unexpected line"):
                read_committed(d, parse_word_count)
            self.assertEqual(parse_pair(b"(7,12)\n"), (7, 12))

    def test_csv_and_json_word_counts_parse_and_refuse_others(self):
        self.assertEqual(parse_word_count_csv(b"to,17\n"), ("to", 17))
        self.assertEqual(parse_word_count_json(b'{"word":"to","count":17}\n'), ("to", 17))
        for bad in (b"to 17\n", b'"to,",1\n', b"(to,17)\n"):
            self.assertRaises(ValueError, parse_word_count_csv, bad)
        for bad in (b"to,17\n", b'{"word":"to"}\n', b'{"word":"to","count":"17"}\n',
                    b'{"word":"to","count":1,"x":0}\n', b"[\"to\",17]\n"):
            self.assertRaises(ValueError, parse_word_count_json, bad)

    def test_tokenize_as_wordcount(self):
        self.assertEqual(tokenize(b"To be, or NOT to-be:--'tis B52s\xc3\xa9t\n"),
                         ["to", "be", "or", "not", "to", "be", "tis", "b52s", "t"])

    def test_corpus_is_deterministic_and_skewed(self):
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            a = write_corpus(os.path.join(d, "a"), 2, 200_000)
            b = write_corpus(os.path.join(d, "b"), 2, 200_000)
            for x, y in zip(a, b):
                with open(x, "rb") as f, open(y, "rb") as g:
                    self.assertEqual(f.read(), g.read())
            counts = count_words(os.path.join(d, "a"))
            top = sorted(counts.values(), reverse=True)
            self.assertEqual(max(counts, key=counts.get), "the")
            self.assertGreater(top[0], 50 * top[len(top) // 2])


if __name__ == "__main__":
    unittest.main()
