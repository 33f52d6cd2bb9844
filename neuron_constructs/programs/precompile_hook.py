def handler(event: dict[str, object], context: object) -> dict[str, object]:
    raise NotImplementedError
