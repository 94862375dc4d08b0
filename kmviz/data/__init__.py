"""Datasets: the Ratings container, loaders, built-in data, synthetic generators, splits.

:func:`load` is the single entry point: a catalogue name (:func:`list_datasets`) or a path.
"""

from .builtin import load_boston, load_gapminder, load_movielens_small
from .graphs import erdos_renyi_graph, group_graph, temporal_graph
from .features import check_feature_matrix, encode_features, normalize_rows
from .catalogue import DatasetEntry, Suggestion, get_dataset, list_datasets, load
# the settings measured per family are the registry's (the catalogue never imports it)
from ..families import suggested_settings
from .loaders import (
    detect_format,
    load_basket,
    load_delimited,
    load_matrix_market,
    load_movielens_100k,
    load_movielens_csv,
    load_movielens_dat,
    load_path,
    load_table,
    load_zip,
    max_upload_bytes,
)
from .parquet import read_parquet
from .partitioned import PartitionedRatings, scan_parquet
from .ratings import Ratings
from .splits import DEFAULT_SPLIT, Split, make_split
from .synthetic import (
    PlantedKMTruth,
    PlantedLowRankTruth,
    PlantedTowersTruth,
    implication_pairs,
    km_toy,
    make_planted_km,
    make_planted_lowrank,
    make_planted_towers,
    planted_km,
    planted_km_truth,
    planted_lowrank,
    planted_towers,
)

__all__ = [
    "DEFAULT_SPLIT",
    "Split",
    "make_split",
    "normalize_rows",
    "DatasetEntry",
    "Suggestion",
    "PlantedKMTruth",
    "PlantedLowRankTruth",
    "PlantedTowersTruth",
    "Ratings",
    "check_feature_matrix",
    "detect_format",
    "encode_features",
    "get_dataset",
    "implication_pairs",
    "km_toy",
    "list_datasets",
    "load",
    "load_basket",
    "load_delimited",
    "load_table",
    "read_parquet",
    "scan_parquet",
    "PartitionedRatings",
    "suggested_settings",
    "load_matrix_market",
    "load_movielens_100k",
    "load_movielens_csv",
    "load_movielens_dat",
    "load_movielens_small",
    "load_boston",
    "load_gapminder",
    "erdos_renyi_graph",
    "group_graph",
    "temporal_graph",
    "load_path",
    "load_zip",
    "make_planted_km",
    "make_planted_lowrank",
    "make_planted_towers",
    "max_upload_bytes",
    "planted_km",
    "planted_km_truth",
    "planted_lowrank",
    "planted_towers",
]
