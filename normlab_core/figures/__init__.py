"""The book's figures: the house style (style.py), drawn diagrams (diagrams.py) and one module per section
(s01_… to s09_…), each with its explorables' setup and update functions and its catalog entries()."""
