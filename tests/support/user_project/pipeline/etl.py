"""The team's own pipeline package: jobstream must not hide it."""


def transform(rows: list[int]) -> list[int]:
    return [row * 2 for row in rows]
