"""The manifest: one file format for every command that reads kernels (check, tile, measure).

keys.py holds the table of keys and their parsers; launch.py the entries `check` judges;
tuning.py the tuning spaces `tile` ranks and `measure` times."""

from occupancy.inputs.manifest.keys import KEYS, ManifestError, entry_kind, keys_of, tuning_entry
from occupancy.inputs.manifest.launch import KernelSpec, Manifest, load_manifest

__all__ = ["KEYS", "KernelSpec", "Manifest", "ManifestError", "entry_kind", "keys_of", "load_manifest",
           "tuning_entry"]
