"""jobstream's version: pyproject.toml sets it, once; everything else reads it from the
installed distribution's metadata (``jobstream --version``, ``jobstream.__version__``)."""

from importlib.metadata import PackageNotFoundError, version

from jobstream._pipeline.errors import ConfigurationError


def installed_version() -> str:
    """The version of the installed ``jobstream`` distribution (a wheel or an editable
    install of the checkout)."""
    try:
        return version("jobstream")
    except PackageNotFoundError:
        raise ConfigurationError(
            "jobstream is imported but not installed: install it (pip install -e . in a "
            "checkout) so that its version is known"
        ) from None


VERSION = installed_version()
