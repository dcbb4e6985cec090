"""The Update's text: its body, appendix and sections, from named values and templates."""
