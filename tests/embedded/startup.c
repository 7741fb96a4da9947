// Reset for the mps2-an386 board: the vector table, the FPU switched on, .data copied and .bss
// cleared, semihosting and the C++ constructors set up, then main; its return value is the exit
// code qemu reports (newlib's exit through semihosting). A fault exits with code 3.
#include <stdint.h>
#include <stdlib.h>

extern uint32_t _sidata, _sdata, _edata, _sbss, _ebss, _stack_top;
extern int main(void);
extern void __libc_init_array(void);
extern void initialise_monitor_handles(void);

void reset_handler(void) {
  *(volatile uint32_t*)0xE000ED88u |= 0xFu << 20;  // CPACR: CP10 and CP11 (the FPU), full access
  __asm volatile("dsb\n\tisb" ::: "memory");
  for (uint32_t *s = &_sidata, *d = &_sdata; d < &_edata;) *d++ = *s++;
  for (uint32_t* d = &_sbss; d < &_ebss;) *d++ = 0;
  initialise_monitor_handles();
  __libc_init_array();
  exit(main());
}

// what the C runtime's start files (left out: this file is the start) would define
void* __dso_handle = 0;
void _init(void) {}
void _fini(void) {}

static void fault_handler(void) { exit(3); }

__attribute__((section(".vectors"), used)) static void (*const vectors[16])(void) = {
    (void (*)(void))(uintptr_t)&_stack_top, reset_handler, fault_handler, fault_handler, fault_handler,
    fault_handler, fault_handler, 0, 0, 0, 0, fault_handler, fault_handler, 0, fault_handler, fault_handler,
};
