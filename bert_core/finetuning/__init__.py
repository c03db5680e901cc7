"""Fine-tuning: a task head (sentence or pair classifier, tagger, question answering) trained on a checkpoint's
encoder, and data of the project's own for each.

`data` reads and checks the data files and `corpus_tasks` writes the generated ones (both without torch);
`metrics` scores predictions; `train` runs the loop and saves a checkpoint transformers also loads; `cli` is
`bertscope finetune`.
"""
