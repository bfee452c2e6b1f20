"""Grading helpers of the normlab course: hidden checks, feedback filter, grade command and submission review."""
