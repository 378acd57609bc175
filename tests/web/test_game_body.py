"""The record form's game as the API takes it (app/web/static/game-body.js): a pure module, run in the browser the
page runs it in, case by case: what it sends, and each problem with the field it names."""

from __future__ import annotations

import pytest

#: Runs `call` (a function of the module's exports) in the page: {"value": …} or {"problem": [message, field]}.
#: An object argument's `sideName` is the form's: side 0 is "Ann", side 1 "Bob".
RUN = """async ([call, args]) => {
  const m = await import('/static/game-body.js');
  const sideName = (s) => ['Ann', 'Bob'][s];
  try {
    return { value: m[call](...args.map((a) => (a && a.sideName ? { ...a, sideName } : a))) };
  } catch (err) {
    if (!(err instanceof m.FormProblem)) throw err;
    return { problem: [err.message, err.field] };
  }
}"""


@pytest.fixture(scope="module")
def run(base, browser):
    page = browser.new_page()
    page.goto(base + "/healthz")  # the module is imported from the server's origin
    yield lambda call, *args: page.evaluate(RUN, [call, list(args)])
    page.close()


def test_points_are_both_or_neither_and_whole(run):
    assert run("pointsOf", [["", ""]]) == {"value": None}
    assert run("pointsOf", [[" 21", "15 "], ["", ""]]) == {"value": [[21, 15]]}
    assert run("pointsOf", [["21", ""]]) == {"problem": ["Enter both scores, or neither.", ["points", 0, 1]]}
    two = [["11", "7"], ["9", "2.5"]]
    assert run("pointsOf", two) == {"problem": ["Enter both scores of game 2, as whole numbers.", ["points", 1, 1]]}
    assert run("pointsOf", [["", ""]], 21) == {"problem": ["Enter the score of the game to 21.", ["points", 0, 0]]}
    asked = {"problem": ["Enter the points of each game played.", ["points", 0, 0]]}
    assert run("pointsOf", [["", ""], ["", ""]], 11) == asked


def test_each_side_needs_its_players_once(run):
    assert run("teamsOf", [["ann"], ["bob"]]) == {"value": [["ann"], ["bob"]]}
    assert run("teamsOf", [["ann", ""], ["bob", "cy"]]) == {
        "problem": ["Choose both players of team A.", ["player", 0, 1]]
    }
    assert run("teamsOf", [["ann"], [""]]) == {"problem": ["Choose player B.", ["player", 1, 0]]}
    # The later pick is the one to change.
    assert run("teamsOf", [["ann", "bob"], ["cy", "bob"]]) == {"problem": ["bob is picked twice.", ["player", 1, 1]]}


def test_a_free_for_all_takes_each_picked_player_with_a_place(run):
    assert run("freeForAll", ["ann", "", "cy"], ["2", "", "1"]) == {
        "value": {"sides": [{"players": ["ann"], "rank": 2}, {"players": ["cy"], "rank": 1}]}
    }
    assert run("freeForAll", ["ann", ""], ["1", ""]) == {
        "problem": ["A game needs at least two players.", ["player", 0, 0]]
    }
    assert run("freeForAll", ["ann", "bob", "cy"], ["1", "2", ""]) == {
        "problem": ["Every player needs a place (1 = first).", ["place", 2]]
    }


def test_a_two_sided_game_says_what_its_button_says(run):
    def two(result, points=None, **extra):
        return run(
            "twoSided", {"sides": [["ann"], ["bob"]], "result": result, "points": points, "sideName": 1, **extra}
        )

    assert two("b") == {"value": {"sides": [{"players": ["ann"], "rank": 2}, {"players": ["bob"], "rank": 1}]}}
    seats = [{"seat": "home"}, {"seat": "away"}]
    assert two("draw", seats=seats)["value"]["sides"] == [
        {"players": ["ann"], "rank": 1, "seat": "home"},
        {"players": ["bob"], "rank": 1, "seat": "away"},
    ]
    assert two("a", [[21, 15]])["value"]["sides"] == [
        {"players": ["ann"], "rank": 1, "score": 21},
        {"players": ["bob"], "rank": 2, "score": 15},
    ]
    # A score that says otherwise names the winner it says, as the form names the sides.
    said = "The score says Bob won: press “Bob won”, or correct the score."
    assert two("a", [[15, 21]]) == {"problem": [said, ["points", 0, 0]]}
    assert two("a", [[15, 15]])["problem"][0] == "The score is a draw: press “Draw”, or correct the score."
    # A best-of-3: won with two games, sent as the match; one game short, the next game's points are asked for.
    match = {"format": "match", "bestOf": 3}
    assert two("a", [[11, 7], [9, 11], [11, 5]], **match) == {
        "value": {"sides": [{"players": ["ann"]}, {"players": ["bob"]}], "match": [[11, 7], [9, 11], [11, 5]]}
    }
    undecided = two("a", [[11, 7]], **match)["problem"]
    assert undecided[1] == ["points", 1, 0] and undecided[0].startswith("A best-of-3 is won with 2 games")
    # One game on a best-of-3 ladder: a single game with its score.
    assert two("a", [[21, 15]], format="game", bestOf=3)["value"]["sides"][0] == {
        "players": ["ann"],
        "rank": 1,
        "score": 21,
    }
