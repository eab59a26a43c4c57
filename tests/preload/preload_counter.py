"""The counter the toroid preload exports (toroid_preload_calls): how many calls it served in
this process. Exits the script when the preload is not loaded."""
import ctypes
import sys


def served_counter():
    try:
        served = ctypes.CDLL(None).toroid_preload_calls
    except AttributeError:
        sys.exit("the toroid preload is not loaded (LD_PRELOAD)")
    served.restype = ctypes.c_ulonglong
    return served
