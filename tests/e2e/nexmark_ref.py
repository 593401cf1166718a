"""A reference for spate's nexmark connector, computed outside spate: a port
to Python, class by class, of the Nexmark repository's Flink generator
(nexmark-flink, com.github.nexmark.flink.generator: GeneratorConfig,
NexmarkGenerator, model/PersonGenerator, AuctionGenerator, BidGenerator,
PriceGenerator, StringsGenerator, LongGenerator), with java.util.Random's
generator and Java's int and long arithmetic (truncating division and
remainder, 32-bit wrap-around) written out.

The generator is the release's whose NexmarkGenerator seeds a
java.util.Random with each event's id, run as Flink's table source runs it
at parallelism 1 (GeneratorConfig(conf, baseTime, firstEventId 1,
numEvents, firstEventNumber 1)), with the bid's channel and url of the
later BidGenerator. Where the reference is not deterministic (the URLs'
path segments come from an unseeded Random), the choice spate documents in
docs/sql.md is followed: a Random seeded with the channel's number (a hot
channel's: 10000 + its index)."""

import datetime
import math

MASK48 = (1 << 48) - 1
MULT = 0x5DEECE66D


def i32(v):
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v & 0x80000000 else v


def i64(v):
    v &= 0xFFFFFFFFFFFFFFFF
    return v - (1 << 64) if v & (1 << 63) else v


def jdiv(a, b):
    """Java's / on integers: toward zero."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def jmod(a, b):
    """Java's %: the sign of the dividend."""
    return a - jdiv(a, b) * b


class JavaRandom:
    """java.util.Random (its documented linear congruential generator)."""

    def __init__(self, seed):
        self.seed = (seed ^ MULT) & MASK48

    def next(self, bits):
        self.seed = (self.seed * MULT + 0xB) & MASK48
        return i32(self.seed >> (48 - bits))

    def next_int(self, bound=None):
        if bound is None:
            return self.next(32)
        r = self.next(31)
        m = bound - 1
        if bound & m == 0:
            return i32((bound * r) >> 31)
        u = r
        while True:
            r = jmod(u, bound)
            if i32(u - r + m) >= 0:
                return r
            u = self.next(31)

    def next_long(self):
        return i64((self.next(32) << 32) + self.next(32))

    def next_double(self):
        return ((self.next(26) << 27) + self.next(27)) * (1.0 / (1 << 53))


def java_round(x):
    """Math.round(double): the nearest long, halves up."""
    return math.floor(x + 0.5)


class Config:
    """NexmarkConfiguration's fields the events depend on, as the Flink
    connector's options set them, and GeneratorConfig's derived values."""

    def __init__(self, events=0, rate=10000, person=1, auction=3, bid=46, person_size=200,
                 auction_size=500, bid_size=100, hot_auctions=2, hot_bidders=4, hot_sellers=4,
                 base_time=0):
        self.events = events
        self.person, self.auction, self.bid = person, auction, bid
        self.total = person + auction + bid
        self.person_size, self.auction_size, self.bid_size = person_size, auction_size, bid_size
        self.hot_auctions, self.hot_bidders, self.hot_sellers = (hot_auctions, hot_bidders,
                                                                 hot_sellers)
        self.in_flight, self.active_people = 100, 1000
        self.base_time = base_time
        self.first_event_id, self.first_event_number = 1, 1
        self.delay_us = 1000000.0 / rate * 1  # numEventGenerators: one generator

    def timestamp_for(self, event_number):
        return self.base_time + jdiv(int(event_number * self.delay_us), 1000)


# ---- StringsGenerator, PriceGenerator, LongGenerator ----

def next_string(r, max_length, special=" "):
    n = 3 + r.next_int(max_length - 3)
    out = []
    for _ in range(n):
        out.append(special if r.next_int(13) == 0 else chr(ord("a") + r.next_int(26)))
    s = "".join(out)
    return s.strip(" ") if special == " " else s  # String.trim(): only spaces can occur


def next_exact_string(r, length):
    out, rnd, n = [], 0, 0
    for _ in range(length):
        if n == 0:
            rnd = r.next_int()
            n = 6
        out.append(chr(ord("a") + jmod(rnd, 26)))
        rnd = jdiv(rnd, 26)
        n -= 1
    return "".join(out)


def next_extra(r, current, desired):
    if current > desired:
        return ""
    desired -= current
    delta = java_round(desired * 0.2)
    size = desired - delta + (0 if delta == 0 else r.next_int(2 * delta))
    return next_exact_string(r, size)


def next_price(r):
    return java_round(math.pow(10.0, r.next_double() * 6.0) * 100.0)


def next_long(r, n):
    if n < 2147483647:
        return r.next_int(n)
    return abs(jmod(r.next_long(), n))


# ---- ids (PersonGenerator, AuctionGenerator) ----

def last_base0_person_id(c, event_id):
    epoch, offset = jdiv(event_id, c.total), jmod(event_id, c.total)
    if offset >= c.person:
        offset = c.person - 1
    return epoch * c.person + offset


def last_base0_auction_id(c, event_id):
    epoch, offset = jdiv(event_id, c.total), jmod(event_id, c.total)
    if offset < c.person:
        epoch -= 1
        offset = c.auction - 1
    elif offset >= c.person + c.auction:
        offset = c.auction - 1
    else:
        offset -= c.person
    return epoch * c.auction + offset


def next_base0_person_id(c, r, event_id):
    num_people = last_base0_person_id(c, event_id) + 1
    active = min(num_people, c.active_people)
    return num_people - active + next_long(r, active + 10)


def next_base0_auction_id(c, r, event_id):
    max_a = last_base0_auction_id(c, event_id)
    min_a = max(max_a - c.in_flight, 0)
    return min_a + next_long(r, max_a - min_a + 1 + 10)


# ---- the events ----

FIRST_NAMES = "Peter,Paul,Luke,John,Saul,Vicky,Kate,Julie,Sarah,Deiter,Walter".split(",")
LAST_NAMES = "Shultz,Abrams,Spencer,White,Bartels,Walton,Smith,Jones,Noris".split(",")
CITIES = ("Phoenix,Los Angeles,San Francisco,Boise,Portland,Bend,Redmond,Seattle,Kent,"
          "Cheyenne").split(",")
STATES = "AZ,CA,ID,OR,WA,WY".split(",")
HOT_CHANNELS = ["Google", "Facebook", "Baidu", "Apple"]


def person(c, r, event_id, ts):
    pid = last_base0_person_id(c, event_id) + 1000
    name = FIRST_NAMES[r.next_int(len(FIRST_NAMES))] + " " + LAST_NAMES[r.next_int(
        len(LAST_NAMES))]
    email = next_string(r, 7) + "@" + next_string(r, 5) + ".com"
    card = " ".join("%04d" % r.next_int(10000) for _ in range(4))
    city = CITIES[r.next_int(len(CITIES))]
    state = STATES[r.next_int(len(STATES))]
    size = 8 + len(name) + len(email) + len(card) + len(city) + len(state)
    extra = next_extra(r, size, c.person_size)
    return {"id": pid, "name": name, "emailAddress": email, "creditCard": card, "city": city,
            "state": state, "dateTime": ts, "extra": extra}


def auction(c, r, count, event_id, ts):
    aid = last_base0_auction_id(c, event_id) + 1000
    if r.next_int(c.hot_sellers) > 0:
        seller = jdiv(last_base0_person_id(c, event_id), 100) * 100
    else:
        seller = next_base0_person_id(c, r, event_id)
    seller += 1000
    category = 10 + r.next_int(5)
    initial = next_price(r)
    # nextAuctionLengthMs
    current = c.first_event_number + count
    ahead = jdiv(c.in_flight * c.total, c.auction)
    horizon = c.timestamp_for(current + ahead) - ts
    expires = ts + 1 + next_long(r, max(horizon * 2, 1))
    name = next_string(r, 20)
    desc = next_string(r, 100)
    reserve = initial + next_price(r)
    size = 8 + len(name) + len(desc) + 8 + 8 + 8 + 8 + 8
    extra = next_extra(r, size, c.auction_size)
    return {"id": aid, "itemName": name, "description": desc, "initialBid": initial,
            "reserve": reserve, "dateTime": ts, "expires": expires, "seller": seller,
            "category": category, "extra": extra}


def integer_reverse(v):
    v &= 0xFFFFFFFF
    return i32(int(format(v, "032b")[::-1], 2))


_urls = {}


def channel_url(slot):
    """The URL of channel slot (a hot channel's: 10000 + its index)."""
    if slot not in _urls:
        r = JavaRandom(slot)
        url = "https://www.nexmark.com/" + "".join(next_string(r, 5, "_") + "/"
                                                   for _ in range(3)) + "item.htm?query=1"
        if slot < 10000 and r.next_int(10) > 0:
            rev = integer_reverse(slot)
            url += "&channel_id=" + str(rev if rev == -2**31 else abs(rev))
        _urls[slot] = url
    return _urls[slot]


def bid(c, r, event_id, ts):
    if r.next_int(c.hot_auctions) > 0:
        a = jdiv(last_base0_auction_id(c, event_id), 100) * 100
    else:
        a = next_base0_auction_id(c, r, event_id)
    a += 1000
    if r.next_int(c.hot_bidders) > 0:
        bidder = jdiv(last_base0_person_id(c, event_id), 100) * 100 + 1
    else:
        bidder = next_base0_person_id(c, r, event_id)
    bidder += 1000
    price = next_price(r)
    if r.next_int(2) > 0:
        i = r.next_int(len(HOT_CHANNELS))
        channel, url = HOT_CHANNELS[i], channel_url(10000 + i)
    else:
        n = r.next_int(10000)
        channel, url = f"channel-{n}", channel_url(n)
    bidder += 1000  # as the reference's BidGenerator: a second time
    extra = next_extra(r, 8 + 8 + 8 + 8, c.bid_size)
    return {"auction": a, "bidder": bidder, "price": price, "channel": channel, "url": url,
            "dateTime": ts, "extra": extra}


def events(c, n=None):
    """The first n events (all of c.events when None) as (kind, fields):
    NexmarkGenerator.nextEvent, count by count."""
    n = c.events if n is None else n
    for count in range(n):
        number = c.first_event_number + count  # outOfOrderGroupSize 1: not adjusted
        event_id = c.first_event_id + number
        ts = c.timestamp_for(number)
        r = JavaRandom(event_id)
        rem = jmod(event_id, c.total)
        if rem < c.person:
            yield "person", person(c, r, event_id, ts)
        elif rem < c.person + c.auction:
            yield "auction", auction(c, r, count, event_id, ts)
        else:
            yield "bid", bid(c, r, event_id, ts)


COLUMNS = {
    "person": ["id", "name", "emailAddress", "creditCard", "city", "state", "dateTime",
               "extra"],
    "auction": ["id", "itemName", "description", "initialBid", "reserve", "dateTime",
                "expires", "seller", "category", "extra"],
    "bid": ["auction", "bidder", "price", "channel", "url", "dateTime", "extra"],
}


# ---- the Nexmark queries with joins, over the events (kind, fields) ----
# Timestamps stay milliseconds; rows are tuples in the queries' column order.

def q3(evts):
    """Query 3: auctions of category 10 with their sellers in OR, ID or CA."""
    persons = {f["id"]: f for kind, f in evts if kind == "person"}
    out = []
    for kind, a in evts:
        p = persons.get(a["seller"]) if kind == "auction" else None
        if p is not None and a["category"] == 10 and p["state"] in ("OR", "ID", "CA"):
            out.append((p["name"], p["city"], p["state"], a["id"]))
    return out


def q7(evts, size_ms=10000):
    """Query 7: the bids of each tumbling window's highest price whose time
    is within the window's size before its end (the end included)."""
    top = {}
    for kind, b in evts:
        if kind == "bid":
            end = b["dateTime"] - b["dateTime"] % size_ms + size_ms
            top[end] = max(top.get(end, b["price"]), b["price"])
    return [(b["auction"], b["bidder"], b["price"], b["dateTime"], b["extra"])
            for kind, b in evts if kind == "bid"
            for end, price in top.items()
            if b["price"] == price and end - size_ms <= b["dateTime"] <= end]


def q8(evts, size_ms=10000):
    """Query 8: the people who entered and made auctions in the same
    tumbling window: (id, name, window start)."""
    people = {(f["id"], f["name"], f["dateTime"] - f["dateTime"] % size_ms)
              for kind, f in evts if kind == "person"}
    sellers = {(f["seller"], f["dateTime"] - f["dateTime"] % size_ms)
               for kind, f in evts if kind == "auction"}
    return [p for p in people if (p[0], p[2]) in sellers]


# q20's columns: the bid's, then the auction's.
Q20_BID = ["auction", "bidder", "price", "channel", "url", "dateTime", "extra"]
Q20_AUCTION = ["itemName", "description", "initialBid", "reserve", "dateTime", "expires",
               "seller", "category", "extra"]


def q20(evts):
    """Query 20: bids with their auction's columns, auctions of category 10."""
    auctions = {f["id"]: f for kind, f in evts if kind == "auction" and f["category"] == 10}
    return [tuple(b[c] for c in Q20_BID) + tuple(auctions[b["auction"]][c] for c in Q20_AUCTION)
            for kind, b in evts if kind == "bid" and b["auction"] in auctions]


def q18(bids):
    """Query 18: each bidder's last bid on each auction (of the latest
    dateTime; of equal ones, the last to come), in arrival order of the
    bids."""
    last = {}
    for b in bids:
        k = (b["bidder"], b["auction"])
        if k not in last or b["dateTime"] >= last[k]["dateTime"]:
            last[k] = b
    return list(last.values())


def q19(bids):
    """Query 19: each auction's 10 bids of highest price (of equal prices,
    the first to come ranks first) with their rank, 1 to 10."""
    per = {}
    for i, b in enumerate(bids):
        per.setdefault(b["auction"], []).append((-b["price"], i, b))
    out = []
    for rows in per.values():
        rows.sort(key=lambda t: (t[0], t[1]))
        out += [(b, n + 1) for n, (_, _, b) in enumerate(rows[:10])]
    return out


# ---- the Nexmark queries over changelogs ----

def joined_bids(evts):
    """The bids within their auction's lifetime (dateTime to expires, both
    included), each with its auction, in the bids' order: the join of q4
    and q9."""
    auctions = {f["id"]: f for kind, f in evts if kind == "auction"}
    for kind, b in evts:
        a = auctions.get(b["auction"]) if kind == "bid" else None
        if a is not None and a["dateTime"] <= b["dateTime"] <= a["expires"]:
            yield a, b


def q4(evts):
    """Query 4: per category, the average (Java's long division) of its
    auctions' highest bid prices."""
    final, category = {}, {}
    for a, b in joined_bids(evts):
        final[a["id"]] = max(final.get(a["id"], b["price"]), b["price"])
        category[a["id"]] = a["category"]
    per = {}
    for aid, price in final.items():
        per.setdefault(category[aid], []).append(price)
    return [(c, jdiv(sum(ps), len(ps))) for c, ps in per.items()]


def q5(bids, slide_ms=2000, size_ms=10000):
    """Query 5: in each HOP window, the auctions with the most bids:
    (auction, count)."""
    counts = {}
    for b in bids:
        t = b["dateTime"]
        start = t - t % slide_ms
        while start > t - size_ms:
            counts[(start, b["auction"])] = counts.get((start, b["auction"]), 0) + 1
            start -= slide_ms
    top = {}
    for (w, _), n in counts.items():
        top[w] = max(top.get(w, n), n)
    return [(a, n) for (w, a), n in counts.items() if n >= top[w]]


Q9_AUCTION = ["id", "itemName", "description", "initialBid", "reserve", "dateTime", "expires",
              "seller", "category", "extra"]


def q9(evts):
    """Query 9: each auction's winning bid within its lifetime (highest
    price; of equal prices the earliest dateTime, then the first to come),
    with the auction's columns."""
    best = {}
    for a, b in joined_bids(evts):
        w = best.get(a["id"])
        if w is None or (-b["price"], b["dateTime"]) < (-w[1]["price"], w[1]["dateTime"]):
            best[a["id"]] = (a, b)
    return [tuple(a[c] for c in Q9_AUCTION) +
            (b["auction"], b["bidder"], b["price"], b["dateTime"], b["extra"])
            for a, b in best.values()]
def side_input(n=10000):
    """Query 13's side input: key 0..n-1, each with its value (a word the
    key decides, so that a wrong key shows)."""
    return {k: f"v{k * 7919 % 1000}-{k}" for k in range(n)}


def q13(bids, side):
    """Query 13: each bid with the side input's value of auction mod
    10000."""
    return [(b, side[jmod(b["auction"], 10000)]) for b in bids
            if jmod(b["auction"], 10000) in side]


# Flink's PartitionPathUtils.escapePathName: the characters a partition
# folder's name holds as %XX.
PATH_UNSAFE = set(chr(c) for c in range(0x20)) | set("\"#%'*/:=?\\\x7f{[]^")


def escape_path_name(s):
    """A partition name or value as Flink writes it in a folder's name (a
    NULL or empty value: its default partition name)."""
    if not s:
        return "__DEFAULT_PARTITION__"
    return "".join("%%%02X" % ord(c) if c in PATH_UNSAFE else c for c in s)


def q10(bids):
    """Query 10: each bid under its partition folder, dt=<day>/hm=<HH:mm>
    (escaped): (folder, the bid's columns and its dt and hm)."""
    out = []
    for b in bids:
        t = datetime.datetime(1970, 1, 1) + datetime.timedelta(milliseconds=b["dateTime"])
        part = (("dt", t.strftime("%Y-%m-%d")), ("hm", t.strftime("%H:%M")))
        folder = "/".join(f"{escape_path_name(k)}={escape_path_name(v)}" for k, v in part)
        out.append((folder, (b["auction"], b["bidder"], b["price"], b["dateTime"], b["extra"],
                             part[0][1], part[1][1])))
    return out
