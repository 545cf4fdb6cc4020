"""Labels (worker/pipeline/sources/labels.py): injected noise exact and seeded, the
labels-CSV parser (encodings, BOMs, missing cells, disagreeing duplicates, and a property
test that any bytes give either a mapping or one clear InputError), and a features file's
labels."""

from __future__ import annotations

import csv

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from worker.pipeline.errors import InputError
from worker.pipeline.sources.datasets import open_dataset, parse_spec
from worker.pipeline.sources.labels import inject_noise, read_label_csv


def test_injected_noise_is_exact_and_seeded():
    ds = open_dataset(parse_spec("digits"))
    a = inject_noise(ds.samples, 0.1, seed=3)
    b = inject_noise(ds.samples, 0.1, seed=3)
    assert (a.labels == b.labels).all()
    assert (a.labels != a.true_labels).sum() == round(0.1 * 1797)
    assert (a.true_labels == ds.samples.labels).all()
    with pytest.raises(InputError, match="inject-noise"):
        inject_noise(ds.samples, 1.5, seed=0)


def _write(path, text: str | bytes):
    if isinstance(text, str):
        text = text.encode()
    path.write_bytes(text)
    return path


def test_bom_and_whitespace_are_accepted(tmp_path):
    p = _write(tmp_path / "l.csv", "\ufeffpath , label\nа/1.jpg, cat \nb/2.jpg,dog\n")
    assert read_label_csv(p, "label") == {"а/1.jpg": "cat", "b/2.jpg": "dog"}


def test_agreeing_duplicates_are_fine_disagreeing_ones_name_the_lines(tmp_path):
    p = _write(tmp_path / "l.csv", "path,label\na.jpg,cat\na.jpg,cat\nb.jpg,dog\n")
    assert read_label_csv(p, "label") == {"a.jpg": "cat", "b.jpg": "dog"}
    p = _write(tmp_path / "l.csv", "path,label\na.jpg,cat\nb.jpg,dog\na.jpg,dog\n")
    with pytest.raises(InputError, match=r"'a.jpg' two labels, on lines 2 and 4"):
        read_label_csv(p, "label")


@pytest.mark.parametrize("text, message", [
    (b"path,label\na.jpg,\xff\xfecat\n", "not UTF-8"),
    ("path,label\na.jpg\n", "line 2 has no 'label' value"),
    ("path,label\n,cat\n", "line 2 has no path value"),
    ("path,label\na.jpg,   \n", "line 2 has no 'label' value"),
    ("name,label\na.jpg,cat\n", "needs columns 'path' and 'label'; it has name, label"),
    ("root:x:0:0:root:/root:/bin/bash\n", "it has 1 unnamed"),
])
def test_bad_files_give_one_line(tmp_path, text, message):
    with pytest.raises(InputError, match=message) as err:
        read_label_csv(_write(tmp_path / "l.csv", text), "label")
    assert "\n" not in str(err.value) and "/bin/bash" not in str(err.value)


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=300) | st.text(max_size=300).map(str.encode))
def test_any_bytes_parse_or_fail_cleanly(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("csv") / "l.csv"
    path.write_bytes(data)
    try:
        out = read_label_csv(path, "label")
    except InputError as exc:
        assert str(exc) and "\n" not in str(exc)
    else:
        assert all(k and v and k == k.strip() and v == v.strip() for k, v in out.items())


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.text(min_size=1, max_size=12), st.sampled_from(["cat", "dog"])),
                max_size=12))
def test_written_rows_read_back(tmp_path_factory, rows):
    path = tmp_path_factory.mktemp("csv") / "l.csv"
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["path", "label"])
        w.writerows(rows)
    expected: dict[str, str] = {}
    conflict = False
    for p, label in rows:
        p = p.strip()
        if not p or "\n" in p or "\r" in p or "\x00" in p:
            return  # a blank or multi-line path is a different, tested case
        conflict |= expected.setdefault(p, label) != label
    if conflict:
        with pytest.raises(InputError, match="two labels"):
            read_label_csv(path, "label")
    else:
        assert read_label_csv(path, "label") == expected


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=300) | st.text(max_size=300).map(str.encode),
       st.integers(min_value=0, max_value=6))
def test_features_labels_parse_or_fail_cleanly(tmp_path_factory, data, n_rows):
    """The ``features:`` labels reader: any bytes give a table of exactly ``n_rows`` rows
    or one clear InputError."""
    from worker.pipeline.sources.labels import read_features_labels

    path = tmp_path_factory.mktemp("csv") / "l.csv"
    path.write_bytes(data)
    try:
        samples, _ = read_features_labels(path, n_rows, "label")
    except InputError as exc:
        assert str(exc) and "\n" not in str(exc)
    else:
        assert len(samples) == n_rows and len(samples.classes) >= 2
        assert samples.labels.min() >= 0 and samples.labels.max() < len(samples.classes)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.sampled_from(["cat", "dog", "10", "9", "bird"]), min_size=2, max_size=30),
       st.booleans())
def test_features_labels_keep_row_order_and_order_classes(tmp_path_factory, labels, paths):
    from worker.pipeline.sources.labels import read_features_labels

    path = tmp_path_factory.mktemp("csv") / "l.csv"
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["label", "path"] if paths else ["label"])
        w.writerows([lab, f"img/{i}.png"] if paths else [lab] for i, lab in enumerate(labels))
    if len(set(labels)) < 2:
        with pytest.raises(InputError, match="names one class"):
            read_features_labels(path, len(labels))
        return
    samples, has_images = read_features_labels(path, len(labels))
    assert [samples.classes[c] for c in samples.labels] == labels and has_images == paths
    numeric = all(lab.isdigit() for lab in set(labels))
    assert samples.classes == sorted(set(labels), key=int if numeric else str)
    assert samples.paths[0] == ("img/0.png" if paths else "row/0000000")
