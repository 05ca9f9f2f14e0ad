_default_store = None


def _get_default_store():
    return _default_store
