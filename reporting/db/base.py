"""The declarative base every table of the reporting database is mapped on.

``reporting.db.models`` (the core tables) and ``reporting.db.billing_models`` (the
billing tables) both build on it; importing ``reporting.db.models`` registers both on
``Base.metadata``, which the migrations and the drift test compare.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, BigInteger, Integer, MetaData
from sqlalchemy.orm import DeclarativeBase

# Deterministic constraint names so migrations and drift checks agree on both dialects.
NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

# BIGINT on PostgreSQL, but INTEGER on SQLite so the column is a rowid alias and
# autoincrements.
BigIntId = BigInteger().with_variant(Integer(), "sqlite")
# What a BIGINT (and SQLite's integer) holds: SQLite's driver cannot even bind more.
BIGINT_MIN, BIGINT_MAX = -(2**63), 2**63 - 1


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)
    type_annotation_map = {dict[str, Any]: JSON}
