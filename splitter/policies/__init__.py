"""The balancing policies: which key moves to which engine (DLB-H and DLB-L of the DLB
paper, LPTF, PKG, ELB, CLB, MILP), the load statistics they read, and the trace simulator
(``cep simulate``) that runs them without Spark."""
