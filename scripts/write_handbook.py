"""Write data/handbook/rows.jsonl: a small RAG eval table whose text the raglab developers wrote.

A fictional object-storage product ("Larkspur Storage"), 12 handbook passages, 36 questions, one
system's answers and a person's faithfulness label per answer. The answers include the cases a
judge must handle: fully supported answers, one unsupported number in an otherwise good answer,
negations that fool word overlap, paraphrases that word overlap misses, refusals, and unanswerable
questions. Deterministic; run it to regenerate the file.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "data" / "handbook" / "rows.jsonl"

PASSAGES = {
    "p01": "Larkspur Storage keeps every object in three availability zones within the chosen region. "
    "A write is acknowledged only after all three copies are stored.",
    "p02": "Standard storage costs 2.1 cents per gigabyte per month. Archive storage costs 0.4 cents per "
    "gigabyte per month, and retrieving an archived object takes up to 12 hours.",
    "p03": "Objects can be up to 5 terabytes in size. Uploads larger than 100 megabytes must use multipart "
    "upload, with parts between 5 megabytes and 5 gigabytes.",
    "p04": "Versioning is off by default. When versioning is turned on for a bucket, deleting an object "
    "adds a delete marker and the previous versions remain billable until they expire.",
    "p05": "Lifecycle rules can move objects to archive storage after a set number of days or delete them. "
    "A bucket can have at most 1,000 lifecycle rules.",
    "p06": "All data is encrypted at rest with AES-256. Customers can bring their own keys through the key "
    "service; if a customer key is disabled, objects encrypted with it cannot be read.",
    "p07": "The API allows 3,500 write requests and 5,500 read requests per second for each key prefix. "
    "Clients that exceed the limit receive HTTP 503 Slow Down and should retry with backoff.",
    "p08": "Regions available today are Frankfurt, Dublin, Virginia, Oregon and Singapore. Data never "
    "leaves the region where the bucket was created unless replication is configured.",
    "p09": "Cross-region replication copies new objects to a bucket in another region, usually within 15 "
    "minutes. Objects that existed before replication was enabled are not copied.",
    "p10": "Deleted buckets can be restored by support within 7 days. After 7 days the bucket name is "
    "released and the data is permanently erased.",
    "p11": "The free tier includes 5 gigabytes of standard storage and 20,000 read requests per month for "
    "the first 12 months after sign-up.",
    "p12": "Access is controlled by bucket policies and per-user keys. Public access is blocked by default "
    "and must be enabled per bucket by an administrator.",
}

# (question_id, question, qtype, gold passages, retrieved passages, answer, reference, human label)
# human label: 1 = every claim is supported by the retrieved passages, 0 = at least one is not,
# None = no claims to judge (a refusal).
ROWS = [
    ("h01", "How many copies of each object are stored?", "fact", ["p01"], ["p01", "p08", "p09"],
     "Each object is stored in three availability zones, and writes are acknowledged after all three copies exist.",
     "Three copies, one in each of three availability zones.", 1),
    ("h02", "What does standard storage cost?", "number", ["p02"], ["p02", "p11", "p05"],
     "Standard storage costs 2.1 cents per gigabyte per month.", "2.1 cents per GB-month.", 1),
    ("h03", "How long does it take to retrieve an archived object?", "number", ["p02"], ["p02", "p05", "p04"],
     "Retrieving an archived object takes up to 12 hours, and expedited retrieval finishes in 5 minutes.",
     "Up to 12 hours.", 0),
    ("h04", "What is the largest object I can store?", "number", ["p03"], ["p03", "p07", "p02"],
     "The maximum object size is 5 terabytes.", "5 TB.", 1),
    ("h05", "When must I use multipart upload?", "fact", ["p03"], ["p03", "p01", "p07"],
     "Uploads larger than 100 megabytes must use multipart upload.", "Above 100 MB.", 1),
    ("h06", "Is versioning enabled by default?", "yesno", ["p04"], ["p04", "p05", "p10"],
     "Yes, versioning is enabled by default on every bucket.", "No, it is off by default.", 0),
    ("h07", "Do old versions cost money after I delete an object?", "yesno", ["p04"], ["p04", "p02", "p10"],
     "Yes. Deleting a versioned object only adds a delete marker, so earlier versions stay billable until they expire.",
     "Yes, previous versions remain billable until they expire.", 1),
    ("h08", "How many lifecycle rules can a bucket have?", "number", ["p05"], ["p05", "p04", "p12"],
     "A bucket can have up to 1,000 lifecycle rules.", "At most 1,000.", 1),
    ("h09", "Which encryption is used at rest?", "fact", ["p06"], ["p06", "p12", "p01"],
     "Data at rest is encrypted with AES-256.", "AES-256.", 1),
    ("h10", "What happens if I disable my own encryption key?", "fact", ["p06"], ["p06", "p12", "p10"],
     "Objects encrypted with a disabled customer key can still be read by administrators.",
     "Objects encrypted with it cannot be read.", 0),
    ("h11", "What is the write request limit?", "number", ["p07"], ["p07", "p03", "p11"],
     "You can make 3,500 write requests per second per key prefix.", "3,500 writes per second per prefix.", 1),
    ("h12", "What error do I get when I exceed the request rate?", "fact", ["p07"], ["p07", "p09", "p03"],
     "Clients over the limit get HTTP 503 Slow Down and should retry with backoff.", "HTTP 503 Slow Down.", 1),
    ("h13", "Which regions are available?", "list", ["p08"], ["p08", "p09", "p01"],
     "Buckets can be created in Frankfurt, Dublin, Virginia, Oregon, Singapore and Tokyo.",
     "Frankfurt, Dublin, Virginia, Oregon and Singapore.", 0),
    ("h14", "Does my data ever leave its region?", "yesno", ["p08", "p09"], ["p08", "p09", "p06"],
     "No, data stays in the bucket's region unless you set up replication.",
     "Only if replication is configured.", 1),
    ("h15", "How quickly does replication copy objects?", "number", ["p09"], ["p09", "p08", "p01"],
     "New objects are usually copied to the other region within 15 minutes.", "Usually within 15 minutes.", 1),
    ("h16", "Are existing objects replicated when I turn on replication?", "yesno", ["p09"], ["p09", "p08", "p05"],
     "Yes, all existing objects are copied as soon as replication is enabled.",
     "No, only new objects are copied.", 0),
    ("h17", "Can a deleted bucket be recovered?", "fact", ["p10"], ["p10", "p04", "p12"],
     "Support can restore a deleted bucket within 7 days; after that the data is permanently erased.",
     "Yes, by support within 7 days.", 1),
    ("h18", "What does the free tier include?", "list", ["p11"], ["p11", "p02", "p07"],
     "The free tier gives you 5 gigabytes of standard storage and 20,000 read requests a month for 12 months.",
     "5 GB of standard storage and 20,000 reads per month for 12 months.", 1),
    ("h19", "Is public access allowed?", "yesno", ["p12"], ["p12", "p06", "p08"],
     "Public access is blocked by default; an administrator has to enable it for each bucket.",
     "Blocked by default; an administrator can enable it per bucket.", 1),
    ("h20", "How much does archive storage cost?", "number", ["p02"], ["p02", "p05", "p11"],
     "Archive storage is 0.4 cents per gigabyte per month, about a fifth of the standard price.",
     "0.4 cents per GB-month.", 1),
    ("h21", "How big can each part of a multipart upload be?", "number", ["p03"], ["p03", "p07", "p02"],
     "Each part must be between 5 megabytes and 5 gigabytes, and an upload can have at most 10,000 parts.",
     "Between 5 MB and 5 GB.", 0),
    ("h22", "What is the read request limit?", "number", ["p07"], ["p07", "p11", "p03"],
     "Reads are limited to 5,500 per second for each key prefix.", "5,500 reads per second per prefix.", 1),
    ("h23", "Who can turn on public access?", "fact", ["p12"], ["p12", "p06", "p10"],
     "Only an administrator can enable public access, and only for one bucket at a time.",
     "An administrator.", 1),
    ("h24", "Can lifecycle rules delete objects?", "yesno", ["p05"], ["p05", "p04", "p02"],
     "Yes, a lifecycle rule can delete objects after a set number of days.", "Yes.", 1),
    ("h25", "When is a write acknowledged?", "fact", ["p01"], ["p01", "p03", "p07"],
     "A write is confirmed once the data is durable in every zone.",
     "After all three copies are stored.", 1),
    ("h26", "How long is the free tier available?", "number", ["p11"], ["p11", "p10", "p02"],
     "The free tier lasts for the first year after you sign up.", "12 months after sign-up.", 1),
    ("h27", "Is the bucket name reusable after deletion?", "fact", ["p10"], ["p10", "p12", "p04"],
     "After 7 days the bucket name is released.", "Yes, after 7 days the name is released.", 1),
    ("h28", "Do I pay for requests that get a 503?", "fact", [], ["p07", "p02", "p11"],
     "I don't know; the handbook does not say whether throttled requests are billed.", None, None),
    ("h29", "Is there an SLA for availability?", "fact", [], ["p01", "p08", "p10"],
     "The documents do not mention an availability SLA.", None, None),
    ("h30", "Which compliance certifications does Larkspur hold?", "list", [], ["p06", "p12", "p08"],
     "Larkspur Storage is certified under ISO 27001 and SOC 2 Type II.", None, 0),
    ("h31", "Can I use my own encryption keys?", "yesno", ["p06"], ["p06", "p12", "p03"],
     "Yes, you can bring your own keys through the key service.", "Yes, through the key service.", 1),
    ("h32", "Is versioning required for replication?", "yesno", [], ["p09", "p04", "p08"],
     "Replication requires versioning to be enabled on both buckets.", None, 0),
    ("h33", "What does retrieving archived data cost?", "number", ["p02"], ["p02", "p05", "p11"],
     "Retrieving archived data costs 1 cent per gigabyte and takes up to 12 hours.",
     "The handbook gives the time (up to 12 hours) but not a retrieval price.", 0),
    ("h34", "How many availability zones hold my data?", "number", ["p01"], ["p01", "p09", "p08"],
     "Your objects are kept in three availability zones in the region you chose.", "Three.", 1),
    ("h35", "What is the maximum number of buckets per account?", "number", [], ["p05", "p12", "p10"],
     "Sorry, I cannot find the bucket limit in the handbook.", None, None),
    ("h36", "Does deleting a versioned object remove it immediately?", "yesno", ["p04"], ["p04", "p10", "p05"],
     "Deleting a versioned object does not remove it immediately; a delete marker is added instead.",
     "No, a delete marker is added and previous versions remain.", 1),
]


def main() -> int:
    OUT.parent.mkdir(parents=True, exist_ok=True)
    lines = []
    for qid, question, qtype, gold, retrieved, answer, reference, label in ROWS:
        lines.append(json.dumps({
            "question_id": qid,
            "question": question,
            "qtype": qtype,
            "retrieved": retrieved,
            "gold": gold,
            "context": [PASSAGES[p] for p in retrieved],
            "answer": answer,
            "reference": reference,
            "human_faithful": label,
        }, ensure_ascii=False))
    OUT.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {len(lines)} rows to {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
