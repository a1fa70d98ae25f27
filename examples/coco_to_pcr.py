"""Converts a COCO-style detection dataset (an images folder and an instances
JSON) to pcr: each image's boxes become a float list (x, y, w, h per box),
its category ids an id list, with areas, crowd flags and the COCO image id.

usage: PYTHONPATH=build/python /usr/bin/python3 examples/coco_to_pcr.py \
           IMAGES_DIR INSTANCES_JSON OUT_DIR [--images-per-record N]

Then, for training:
    ds = pcr.ImageDataset(OUT_DIR)
    f = ds.fields(i, ["boxes", "category_ids"])
    boxes = numpy.array(f["boxes"]).reshape(-1, 4)   # one row per object
"""
import argparse
import collections
import json
import pathlib
import tempfile

import pcr


def coco_fields(instances):
    """One JSON Lines row per image of `instances`, keyed by its file name."""
    objects = collections.defaultdict(list)
    for a in instances["annotations"]:
        objects[a["image_id"]].append(a)
    for image in instances["images"]:
        anns = objects[image["id"]]
        yield {
            "path": image["file_name"],
            "image_id": image["id"],
            "boxes": [float(v) for a in anns for v in a["bbox"]],
            "category_ids": [a["category_id"] for a in anns],
            "areas": [float(a["area"]) for a in anns],
            "iscrowd": [a.get("iscrowd", 0) for a in anns],
        }


def convert(images_dir, instances_path, out_dir, images_per_record=1024):
    instances = json.loads(pathlib.Path(instances_path).read_text())
    with tempfile.TemporaryDirectory() as tmp:
        fields = pathlib.Path(tmp) / "fields.jsonl"
        listing = pathlib.Path(tmp) / "list.csv"
        with open(fields, "w") as out, open(listing, "w") as names:
            for row in coco_fields(instances):
                out.write(json.dumps(row) + "\n")
                names.write(f"{row['path']},-1\n")  # detection images have no class label
        # Declared types: an image without objects has empty lists, which say nothing of their type.
        return pcr.convert_images(str(images_dir), str(out_dir), list=str(listing), fields=str(fields),
                                  images_per_record=images_per_record,
                                  field_types={"boxes": "float32_list", "areas": "float32_list",
                                               "category_ids": "id_list", "iscrowd": "id_list"},
                                  field_order=["boxes", "category_ids"])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("images_dir")
    ap.add_argument("instances_json")
    ap.add_argument("out_dir")
    ap.add_argument("--images-per-record", type=int, default=1024)
    a = ap.parse_args()
    summary = convert(a.images_dir, a.instances_json, a.out_dir, a.images_per_record)
    print(f"{summary['images']} images with their objects in {a.out_dir}")


if __name__ == "__main__":
    main()
