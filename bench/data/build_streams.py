"""Rebuild the two dated match records of bench/data/README.md from local git mirrors of their sources.

    python -m bench.data.build_streams F1DB_GIT_DIR FOOTBALL_JSON_GIT_DIR

F1DB_GIT_DIR is a clone (bare is fine) of https://github.com/f1db/f1db and FOOTBALL_JSON_GIT_DIR one of
https://github.com/openfootball/football.json; both are read at HEAD (``git show HEAD:path``), and the commit read
is written into each output file. Writes, next to this script:

- f1-races-1990-2025.json: every World Championship race of 1990-2025, each as its finishing order (groups of
  drivers, best first; a group of several is a tie);
- premier-league-2010-2025.json: every Premier League match of 2010-11 ... 2024-25 with its full-time score, team
  names unified across seasons.

Standard library only, plus PyYAML when it can be imported (otherwise the flat YAML files are parsed by hand).
"""

import collections
import json
import re
import subprocess
import sys
from pathlib import Path

try:
    import yaml
except ImportError:  # the F1DB files are flat; parse_flat_yaml reads them
    yaml = None

HERE = Path(__file__).resolve().parent

# ---------------------------------------------------------------------------------------------------- git access


def git(repo: str, *args: str) -> str:
    return subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True, text=True).stdout


def head(repo: str) -> tuple[str, str]:
    """The commit hash and commit date (YYYY-MM-DD) of HEAD."""
    sha, day = git(repo, "log", "-1", "--format=%H %cs", "HEAD").split()
    return sha, day


def show(repo: str, path: str) -> str:
    return git(repo, "show", f"HEAD:{path}")


def write_stream(path: Path, header: dict, key: str, items: list) -> None:
    """Compact JSON with one item a line (small diffs): {header..., key: [\\n item,\\n item\\n]}."""
    lines = [json.dumps(item, ensure_ascii=False, separators=(",", ":")) for item in items]
    head_json = json.dumps(header, ensure_ascii=False, separators=(",", ":"))[:-1]
    path.write_text(f'{head_json},"{key}":[\n' + ",\n".join(lines) + "\n]}\n", encoding="utf-8")


# ---------------------------------------------------------------------------------------------------- YAML


def scalar(text: str):
    """A plain YAML scalar as F1DB writes them: empty -> None, integer, quoted or bare string."""
    text = text.strip()
    if text == "":
        return None
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    if text[0] == '"':
        return json.loads(text)  # F1DB's double-quoted values ("1:52:32.829", "+1 lap") have no YAML-only escapes
    if text[0] == "'":
        return text[1:-1].replace("''", "'")
    return text


def parse_flat_yaml(text: str):
    """A mapping of scalars, or a list of such mappings (``- key: value`` then ``  key: value``)."""
    items, current = [], {}
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if line.startswith("- "):
            current = {}
            items.append(current)
            line = line[2:]
        key, _, value = line.strip().partition(":")
        current[key] = scalar(value)
    return items if items else current


def load_yaml(text: str):
    return yaml.safe_load(text) if yaml is not None else parse_flat_yaml(text)


# ---------------------------------------------------------------------------------------------------- F1

F1_YEARS = range(1990, 2026)
NOT_CLASSIFIED = {"DNF", "NC", "DSQ"}  # started, not classified: ranked below the classified by laps completed
DID_NOT_START = {"DNS", "DNQ", "DNPQ", "EX", "DNP"}  # left out

# Corrections of evident slips in the source, (year, race folder, driverId) -> position used instead.
F1_CORRECTIONS = {
    # Listed after the DNFs with 0 laps and reasonRetired "Collision", but position 18 (= his gridPosition 18);
    # the race had 14 classified finishers. Ranked as a DNF with 0 laps.
    ("1993", "15-japan", "andrea-de-cesaris"): "DNF",
}


def finish_order(entries: list[dict]) -> list[list[str]]:
    """Groups of driverIds, best first: classified by position, then the not classified by laps (ties share a
    group); non-starters left out; a driver entered twice (shared drives) keeps his better entry."""
    best: dict[str, tuple] = {}
    for e in entries:
        pos, laps = e["position"], e["laps"] or 0
        if isinstance(pos, int):
            key = (0, pos)
        elif pos in NOT_CLASSIFIED:
            key = (1, -laps)
        elif pos in DID_NOT_START:
            key = (2, 0)
        else:
            raise ValueError(f"unknown position {pos!r} of {e['driverId']}")
        if e["driverId"] not in best or key < best[e["driverId"]]:
            best[e["driverId"]] = key
    groups: dict[tuple, list[str]] = collections.defaultdict(list)
    for driver, key in best.items():
        if key[0] < 2:
            groups[key].append(driver)
    for key, group in groups.items():
        if key[0] == 0 and len(group) > 1:
            raise ValueError(f"two drivers classified in position {key[1]}: {group}")
    return [sorted(groups[key]) for key in sorted(groups)]


def build_f1(repo: str) -> None:
    sha, day = head(repo)
    folders = collections.defaultdict(set)  # (year, race folder) -> its files
    for path in git(repo, "ls-tree", "-r", "--name-only", "HEAD", "src/data/seasons").split():
        parts = path.split("/")  # src/data/seasons/<year>/races/<nn-name>/<file>
        if len(parts) == 7 and parts[4] == "races" and int(parts[3]) in F1_YEARS:
            folders[parts[3], parts[5]].add(parts[6])
    races, skipped, odd = [], [], []
    for year, folder in sorted(folders):
        base = f"src/data/seasons/{year}/races/{folder}"
        has_results = "race-results.yml" in folders[year, folder]
        entries = load_yaml(show(repo, f"{base}/race-results.yml")) if has_results else None
        if not entries:
            skipped.append(f"{year}/{folder}")
            continue
        race = load_yaml(show(repo, f"{base}/race.yml"))
        seen_unclassified = False
        for e in entries:
            fix = F1_CORRECTIONS.get((year, folder, e["driverId"]))
            if fix is not None:
                odd.append(f"{year}/{folder}: {e['driverId']} position {e['position']} taken as {fix}")
                e["position"] = fix
            elif e["position"] in NOT_CLASSIFIED and e["laps"] is None and e["gridPosition"] is None:
                # Disqualified before the start, so never on the grid (1990: Alliot at Phoenix, Moreno in Mexico).
                odd.append(f"{year}/{folder}: {e['driverId']} {e['position']} without laps or grid place, left out")
                e["position"] = "DNS"
            elif isinstance(e["position"], int) and seen_unclassified:
                odd.append(f"{year}/{folder}: {e['driverId']} classified {e['position']} after an unclassified entry")
            elif e["position"] in NOT_CLASSIFIED and e["laps"] is None:
                odd.append(f"{year}/{folder}: {e['driverId']} {e['position']} without laps, counted as 0 laps")
            seen_unclassified |= not isinstance(e["position"], int)
        date = str(race["date"])  # PyYAML reads it as a datetime.date
        races.append(
            (date, race["round"], {"date": date, "race": race["officialName"], "finish": finish_order(entries)})
        )
    races = [r for _, _, r in sorted(races, key=lambda row: row[:2])]

    header = {
        "source": f"https://github.com/f1db/f1db (commit {sha}, {day}; "
        f"src/data/seasons/{F1_YEARS[0]}..{F1_YEARS[-1]}/races/*/race.yml and race-results.yml)",
        "licence": "CC BY 4.0 (https://creativecommons.org/licenses/by/4.0/)",
        "attribution": f"Formula 1 race results {F1_YEARS[0]}-{F1_YEARS[-1]} from F1DB (https://github.com/f1db/f1db), "
        "CC BY 4.0 (https://creativecommons.org/licenses/by/4.0/); "
        "reduced to date and finishing order by the melo project.",
    }
    out = HERE / f"f1-races-{F1_YEARS[0]}-{F1_YEARS[-1]}.json"
    write_stream(out, header, "races", races)

    sizes = [sum(len(g) for g in r["finish"]) for r in races]
    ties = [g for r in races for g in r["finish"] if len(g) > 1]
    drivers = {d for r in races for g in r["finish"] for d in g}
    print(f"F1DB commit {sha} ({day}) -> {out.name}, {out.stat().st_size:,} bytes")
    print(f"  races {len(races)}, skipped (no results) {len(skipped)} {skipped}")
    print(f"  distinct drivers {len(drivers)}")
    print(f"  field: largest {max(sizes)}, smallest {min(sizes)}, median {sorted(sizes)[len(sizes) // 2]}")
    print(
        f"  tied groups {len(ties)} in {sum(any(len(g) > 1 for g in r['finish']) for r in races)} races "
        f"(drivers in them {sum(map(len, ties))}, largest {max(map(len, ties), default=0)})"
    )
    print(f"  ties at the top: {sum(len(r['finish'][0]) > 1 for r in races)}")
    print(f"  dates {races[0]['date']} .. {races[-1]['date']}")
    for line in odd:
        print(f"  note: {line}")


# ---------------------------------------------------------------------------------------------------- football

SEASONS = [f"{y}-{(y + 1) % 100:02d}" for y in range(2010, 2025)]


def club(name: str) -> str:
    """One name per club: drop the "FC"/"AFC" that some seasons' files add ("Arsenal FC", "AFC Bournemouth")."""
    name = re.sub(r" A?FC$", "", name)
    return re.sub(r"^AFC ", "", name)


def build_football(repo: str) -> None:
    sha, day = head(repo)
    raw_names = collections.defaultdict(set)
    seasons_of = collections.defaultdict(list)
    rows, redated, unscored = [], [], 0
    for s, season in enumerate(SEASONS):
        first_year = int(season[:4])
        matches = json.loads(show(repo, f"{season}/en.1.json"))["matches"]
        clubs = set()
        for i, m in enumerate(matches):
            ft = (m.get("score") or {}).get("ft")
            if not ft:
                unscored += 1
                continue
            date = m["date"]
            if date < f"{first_year}-08-01":
                # 2019-20's restart after the pause (Matchday 32-38, July 2020) is dated July 2019 in the source.
                redated.append(f"{season} {m['round']} {date} {m['team1']} v {m['team2']}")
                date = f"{int(date[:4]) + 1}{date[4:]}"
            assert f"{first_year}-08-01" <= date <= f"{first_year + 1}-07-31", (season, m)
            home, away = club(m["team1"]), club(m["team2"])
            raw_names[home].update([m["team1"]])
            raw_names[away].update([m["team2"]])
            clubs.update([home, away])
            match = {"date": date, "team1": home, "team2": away, "score": {"ft": list(ft)}}
            rows.append(((date, m.get("time", ""), s, i), match))
        pairs = {(r["team1"], r["team2"]) for key, r in rows if key[2] == s}
        assert len(clubs) == 20 and len(pairs) == 380 == sum(key[2] == s for key, _ in rows), season
        for c in clubs:
            seasons_of[c].append(season)
    rows.sort(key=lambda row: row[0])
    matches = [m for _, m in rows]

    header = {
        "source": f"https://github.com/openfootball/football.json (commit {sha}, {day}; "
        f"{SEASONS[0]}/en.1.json ... {SEASONS[-1]}/en.1.json)",
        "licence": "CC0 1.0 (https://creativecommons.org/publicdomain/zero/1.0/)",
        "attribution": "Premier League results 2010-11 to 2024-25 from openfootball/football.json "
        "(https://github.com/openfootball/football.json), CC0 1.0; team names unified by the melo project.",
    }
    out = HERE / "premier-league-2010-2025.json"
    write_stream(out, header, "matches", matches)

    results = collections.Counter(
        "home" if g1 > g2 else "draw" if g1 == g2 else "away" for g1, g2 in (m["score"]["ft"] for m in matches)
    )
    print(f"football.json commit {sha} ({day}) -> {out.name}, {out.stat().st_size:,} bytes")
    print(f"  matches {len(matches)} (without a full-time score, dropped: {unscored}), clubs {len(seasons_of)}")
    print(f"  home wins {results['home']}, draws {results['draw']}, away wins {results['away']}")
    print(f"  dates {matches[0]['date']} .. {matches[-1]['date']}")
    print(f"  redated {len(redated)} matches (year + 1), first: {redated[:1]}")
    for c in sorted(seasons_of):
        print(
            f"  {c:26} {len(seasons_of[c]):2} seasons {' '.join(s[2:4] for s in seasons_of[c])}"
            f"  raw: {' | '.join(sorted(raw_names[c]))}"
        )
    # One club under two names would show as two names with disjoint seasons that start alike.
    for a in seasons_of:
        for b in seasons_of:
            if a < b and a.split()[0] == b.split()[0] and not set(seasons_of[a]) & set(seasons_of[b]):
                print(f"  check: {a!r} and {b!r} never meet in one season")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    build_f1(sys.argv[1])
    build_football(sys.argv[2])
