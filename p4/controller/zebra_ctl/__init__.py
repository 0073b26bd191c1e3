"""The control plane of the Zebra P4 program (p4/zebra.p4)."""
