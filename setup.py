"""Package metadata, read from settings.ini (nbdev's convention), without pkg_resources."""
from configparser import ConfigParser
from pathlib import Path
import setuptools

here = Path(__file__).parent
cfg = ConfigParser(delimiters=["="])
cfg.read(here / "settings.ini", encoding="utf-8")
cfg = cfg["DEFAULT"]

def reqs(key):
    "The requirements listed under `key`, split on spaces."
    return cfg.get(key, "").split()

analysis, explore, dask = reqs("analysis_requirements"), reqs("explore_requirements"), reqs("dask_requirements")
inspect = reqs("inspect_requirements")  # Inspect AI logs in and out (modelrecord.inspect_logs)
otel = reqs("otel_requirements")  # OpenTelemetry GenAI traces (modelrecord.otel): the OTLP messages, no SDK
remote = reqs("remote_requirements")  # trees at a URL: fsspec, and s3fs for s3://
licenses = {"mit": "License :: OSI Approved :: MIT License"}
statuses = ["Planning", "Pre-Alpha", "Alpha", "Beta", "Production/Stable", "Mature", "Inactive"]

setuptools.setup(
    name=cfg["lib_name"],
    version=cfg["version"],
    description=cfg["description"],
    long_description=(here / "README.md").read_text(encoding="utf-8") if (here / "README.md").exists() else "",
    long_description_content_type="text/markdown",
    author=cfg["author"],
    author_email=cfg["author_email"],
    license="MIT",
    keywords=cfg["keywords"],
    classifiers=[
        "Development Status :: " + cfg["status"] + " - " + statuses[int(cfg["status"])],
        "Intended Audience :: " + cfg["audience"],
        licenses[cfg["license"]],
        "Programming Language :: Python :: 3 :: Only",
        "Programming Language :: Python :: 3.11",  # the version the tests run on
    ],
    python_requires=">=" + cfg["min_python"],
    packages=setuptools.find_packages(include=[cfg["lib_path"], cfg["lib_path"] + ".*"]),
    include_package_data=True,
    package_data={cfg["lib_path"]: reqs("package_data")},
    install_requires=reqs("requirements"),
    extras_require={
        "analysis": analysis,
        "explore": analysis + explore,
        "dask": analysis + dask,
        "inspect": inspect,
        "otel": otel,
        "remote": remote,
        "all": analysis + explore + dask + inspect + otel + remote,
        "dev": analysis + explore + dask + inspect + otel + remote + reqs("dev_requirements"),
    },
    entry_points={"console_scripts": reqs("console_scripts"),
                  "pytest11": ["modelrecord = modelrecord.pytest_plugin"]},  # the plugin: active wherever the package is installed
    zip_safe=False,
)
